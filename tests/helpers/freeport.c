/* freeport: prints a TCP port on 127.0.0.1 that was free a moment ago. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) != 0)
		return 1;
	printf("%d\n", ntohs(a.sin_port));
	close(s);
	return 0;
}
