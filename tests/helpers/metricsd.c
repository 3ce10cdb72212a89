/* metricsd: a scripted HTTP server for the kvstat tests.
 *   metricsd -p PORT [-r READYFILE] [-L LOG] ACTION...
 * Listens on 127.0.0.1:PORT and answers one request per connection, one
 * connection at a time; request k gets ACTION k, the last action repeats:
 *   FILE        status 200 with the file's contents
 *   status=N    status N with a short body
 *   hang        never answers (the connection stays open; the next one is served)
 *   close       closes the connection without answering
 *   nohttp      answers bytes that are not HTTP
 *   big=N       status 200, Content-Length N, N bytes of comment lines
 *   stream=N    the same without Content-Length (the close ends it)
 * READYFILE is created once the socket listens; LOG gets each request line. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arg.h"

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k <= 0)
			return;                 /* the client went away */
		p += k;
		n -= (size_t)k;
	}
}

static void header(int fd, int status, long long len)
{
	char h[256];
	int n;
	if (len >= 0)
		n = snprintf(h, sizeof h, "HTTP/1.1 %d X\r\nContent-Type: text/plain; version=0.0.4\r\n"
		             "Content-Length: %lld\r\nConnection: close\r\n\r\n", status, len);
	else
		n = snprintf(h, sizeof h, "HTTP/1.1 %d X\r\nContent-Type: text/plain; version=0.0.4\r\n"
		             "Connection: close\r\n\r\n", status);
	put(fd, h, (size_t)n);
}

static void padding(int fd, long long n)
{
	char line[4096];
	memset(line, 'x', sizeof line);
	line[0] = '#';
	line[sizeof line - 1] = '\n';
	while (n > 0) {
		size_t k = n < (long long)sizeof line ? (size_t)n : sizeof line;
		if (k < sizeof line)
			line[k - 1] = '\n';
		put(fd, line, k);
		n -= (long long)k;
	}
}

/* Reads the request head (bounded, 2 s at most); its first line goes to log. */
static void read_request(int fd, FILE *log)
{
	char buf[8192];
	size_t len = 0;
	while (len < sizeof buf - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 2000) <= 0)
			break;
		ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		buf[len] = 0;
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[len] = 0;
	if (log) {
		buf[strcspn(buf, "\r\n")] = 0;
		fprintf(log, "%s\n", buf);
		fflush(log);
	}
}

static void serve(int fd, const char *action)
{
	if (strcmp(action, "hang") == 0)
		return;                     /* left open */
	if (strcmp(action, "close") == 0) {
	} else if (strcmp(action, "nohttp") == 0) {
		put(fd, "\x01\x02 this is not HTTP\r\n\r\n", 23);
	} else if (strncmp(action, "status=", 7) == 0) {
		header(fd, (int)arg_long(action + 7), 6);
		put(fd, "error\n", 6);
	} else if (strncmp(action, "big=", 4) == 0) {
		long long n = arg_long(action + 4);
		header(fd, 200, n);
		padding(fd, n);
	} else if (strncmp(action, "stream=", 7) == 0) {
		long long n = arg_long(action + 7);
		header(fd, 200, -1);
		padding(fd, n);
	} else {
		FILE *f = fopen(action, "rb");
		if (!f)
			die(action);
		static char body[1 << 20];
		size_t n = fread(body, 1, sizeof body, f);
		fclose(f);
		header(fd, 200, (long long)n);
		put(fd, body, n);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	int port = 0, c;
	const char *ready = NULL, *logpath = NULL;
	while ((c = getopt(argc, argv, "p:r:L:")) != -1) {
		switch (c) {
		case 'p': port = (int)arg_long(optarg); break;
		case 'r': ready = optarg; break;
		case 'L': logpath = optarg; break;
		default: return 2;
		}
	}
	if (!port || optind == argc) {
		fprintf(stderr, "usage: metricsd -p PORT [-r READYFILE] [-L LOG] ACTION...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	FILE *log = logpath ? fopen(logpath, "a") : NULL;
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1024) != 0)
		die("metricsd: listen");
	if (ready)
		close(open(ready, O_WRONLY | O_CREAT, 0644));
	for (int k = optind;; k += k + 1 < argc) {
		int fd = accept(s, NULL, NULL);
		if (fd < 0)
			continue;
		read_request(fd, log);
		serve(fd, argv[k]);
	}
}
