// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the iWARP connection core (src/transport/iw_conn.c) as
 * a responder taking a peer's stream. Byte 0 picks the set-up as in
 * fuzz_iwarp (bit 0: we require CRC, bit 1: we take markers, bit 2: the
 * stream brings its own MPA Request, else a valid one goes first; bits
 * 3-7: how the stream is cut), so fuzz_iwarp's seeds serve here too. The
 * responder has registered memory, posted receives and a READ of its own
 * outstanding; whatever the bytes, nothing is written outside the
 * registered buffers (ASan) and, once in ERROR or CLOSED, the connection
 * has flushed every WQE.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_iw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t mem[2][8192];
static struct ur_mr mrs[2];

static const struct ur_mr *lookup(void *host, uint32_t key)
{
	(void)host;
	for (int i = 0; i < 2; i++)
		if (mrs[i].rkey == key)
			return &mrs[i];
	return NULL;
}

static const struct ur_dev_ops ops = {.mr_lookup = lookup};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_qp_caps caps = {.max_send_wr = 8, .max_recv_wr = 8,
				  .max_send_sge = 2, .max_recv_sge = 2};
	struct ur_dev dev = {.ops = &ops};
	struct ur_iw_cfg cfg;
	struct ur_iw_conn *c;
	struct ur_cq scq, rcq;
	struct ur_qp qp;
	struct ur_cqe e;
	uint8_t req[64];
	const uint8_t *p;
	size_t at = 0;
	unsigned int cut;
	int posted = 0, done = 0;

	if (!size)
		return 0;
	for (int i = 0; i < 2; i++)
		mrs[i] = (struct ur_mr){
			.iova = 0x10000u * (i + 1), .host = mem[i],
			.length = sizeof(mem[i]), .lkey = 0x100u + i,
			.rkey = 0x100u + i, .pdn = 1, .type = UR_KEY_MR,
			.access = i ? UR_ACCESS_REMOTE_READ
				    : UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
					      UR_ACCESS_REMOTE_READ,
		};
	if (ur_cq_init(&scq, 64) || ur_cq_init(&rcq, 64))
		abort();
	if (ur_qp_create(&dev, &qp, UR_QPT_RC, 1, 1, &caps, &scq, &rcq))
		abort();
	ur_iw_cfg_siw(&cfg, false);
	cfg.pol.crc_required = data[0] & 1;
	cfg.pol.markers = data[0] & 2;
	cut = data[0] >> 3;
	if (ur_iw_conn_new(&qp, &cfg, 0, &c))
		abort();
	for (int i = 0; i < 4; i++) {
		struct ur_sge sg = {0x10000u + 1024u * i, 1024, 0x100};
		struct ur_recv_wr wr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1};

		posted += !ur_iw_post_recv(c, &wr, 0);
	}
	{
		struct ur_sge sg = {0x10000u + 4096, 512, 0x100};
		struct ur_send_wr wr = {.wr_id = 2, .opcode = UR_WR_RDMA_READ,
					.flags = UR_SEND_SIGNALED,
					.remote_addr = 0x1000, .rkey = 0x200,
					.sg_list = &sg, .num_sge = 1};

		posted += !ur_iw_post_send(c, &wr, 0);
	}
	if (!(data[0] & 4)) {
		struct ur_mpa_rr rr = {.rev = 2, .v2 = true, .ird = 4, .ord = 4,
				       .flags = (uint8_t)(data[0] & 3) << 6};
		int n = ur_mpa_rr_encode(req, sizeof(req), &rr);

		if (n < 0)
			abort();
		ur_iw_rx(c, req, (size_t)n, 0);
	}
	data++;
	size--;
	while (at < size) {
		size_t k = cut ? 1 + (at * 7 + cut) % (cut * 97) : size - at;

		if (ur_iw_state(c) == UR_IWS_REQ_RCVD)
			ur_iw_accept(c, NULL, 0, 0);
		if (k > size - at)
			k = size - at;
		ur_iw_rx(c, data + at, k, 0);
		at += k;
		ur_iw_tx_done(c, ur_iw_tx_peek(c, &p), 0);
	}
	if (ur_iw_state(c) == UR_IWS_ERROR || ur_iw_state(c) == UR_IWS_CLOSED) {
		while (ur_cq_poll(&scq, &e, 1) == 1 || ur_cq_poll(&rcq, &e, 1) == 1)
			done++;
		if (done < posted)
			abort(); /* every WQE flushed or completed */
	}
	ur_iw_conn_free(c);
	ur_qp_destroy(&qp);
	ur_cq_fini(&scq);
	ur_cq_fini(&rcq);
	return 0;
}
