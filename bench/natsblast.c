/* natsblast: the baseline of make bench's kvnats section, what nats.c does
 * alone: COUNT messages of SIZE bytes published asynchronously on SUBJECT
 * (into a JetStream stream), then a wait for every acknowledgement; prints
 * the messages acknowledged.  No parsing, no retries, and no message ids
 * unless "ids" follows (then each has a Nats-Msg-Id, as kvnats's have).
 *   natsblast URL SUBJECT COUNT SIZE [ids]
 * Built by bench/run: cc bench/natsblast.c $(pkg-config --cflags --libs libnats) */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: natsblast URL SUBJECT COUNT SIZE [ids]\n");
		return 64;
	}
	long count = atol(argv[3]), size = atol(argv[4]);
	char *data = calloc(1, (size_t)size + 1);
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.PublishAsync.MaxPending = 4096;
	natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
	if (s == NATS_OK)
		s = natsConnection_JetStream(&js, nc, &jo);
	for (long i = 0; s == NATS_OK && i < count; i++) {
		char id[48];
		jsPubOptions po;
		jsPubOptions_Init(&po);
		snprintf(id, sizeof id, "r%032lx", i);
		po.MsgId = argc == 6 ? id : NULL;
		memcpy(data, &i, sizeof i < (size_t)size ? sizeof i : (size_t)size);
		s = js_PublishAsync(js, argv[2], data, (int)size, &po);
	}
	if (s == NATS_OK) {
		jsPubOptions po;
		jsPubOptions_Init(&po);
		po.MaxWait = 60000;
		s = js_PublishAsyncComplete(js, &po);
	}
	if (s != NATS_OK)
		fprintf(stderr, "natsblast: %s\n", natsStatus_GetText(s));
	else
		printf("%ld\n", count);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	free(data);
	nats_Close();
	return s == NATS_OK ? 0 : 69;
}
