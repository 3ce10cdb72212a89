/* freeport: prints a TCP port on 127.0.0.1 that was free a moment ago, or
 * with N, the first of N consecutive free ports.  Ports come from below the
 * kernel's ephemeral range (32768 and up by default), so that the outgoing
 * connections of other tests cannot take them meanwhile. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "arg.h"

#define LOW 20000
#define HIGH 32000

static bool bindable(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	bool ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? arg_long(argv[1]) : 1;
	if (n < 1 || n > 100)
		return 64;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	srand((unsigned)(ts.tv_nsec ^ getpid()));
	for (int tries = 0; tries < 1000; tries++) {
		int base = LOW + rand() % (HIGH - LOW - n);
		int k = 0;
		while (k < n && bindable(base + k))
			k++;
		if (k == n) {
			printf("%d\n", base);
			return 0;
		}
	}
	return 1;
}
