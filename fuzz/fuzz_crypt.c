// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the receive side of an encrypted QP (docs/wire.md
 * "Encryption"). A pair a, b on the transport tests' in-memory network
 * with AES-256-GCM; a's sealed 512-byte WRITE to b is captured once and
 * lost. Each input goes to b from a's own address (the off-path check
 * passes), byte 0 choosing how:
 *   even: the input after byte 0 as the whole packet;
 *   odd:  the captured packet XORed with the input, cut short by up to
 *         (byte 0 >> 1) bytes: a mutated sealed header, trailer, tag.
 * Whatever it is, b's QP stays RTS, and unless the packet is exactly the
 * captured one, not one byte of b's memory changes. Inputs whose byte 0
 * is 0xfe are negotiation MADs instead (ur_crypt_neg.c): parsed, and
 * handed to a QP that is negotiating (c, whose peer d never answers):
 * none may complete the negotiation, since none carries a valid MAC.
 */
#include <stdlib.h>
#include <string.h>

#include "tfix.h"
#include "ur_crypt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tfix f, g;
static uint8_t sealed[2048];
static uint32_t sealed_len;

static void tap(struct tnet *net, const uint8_t *d, uint32_t len, void *arg)
{
	struct ur_pkt p;

	(void)net;
	(void)arg;
	if (!sealed_len && len <= sizeof(sealed) &&
	    ur_pkt_decode(d, len, &p) == UR_DEC_OK &&
	    p.h.opcode == UR_OP_RC_RDMA_WRITE_ONLY) {
		memcpy(sealed, d, len);
		sealed_len = len;
	}
}

static void dev_setup(struct ur_dev *dev, int node, void *arg)
{
	if (node)
		return;
	dev->crypt_policy = UR_CRYPT_POLICY_REQUIRE;
	dev->crypt_alg = UR_CRYPT_AES256GCM;
	memcpy(dev->crypt_key, arg, 32);
}

static void setup(void)
{
	static uint8_t key[32] = "fuzz key, thirty-two bytes long";

	tfix_init(&f, UR_QPT_RC, NULL);
	if (ur_qp_set_crypt(f.a.qp, UR_CRYPT_AES256GCM, key) ||
	    ur_qp_set_crypt(f.b.qp, UR_CRYPT_AES256GCM, key))
		abort();
	f.net.tap = tap;
	f.net.f.loss = 1.0; /* nothing travels but what the fuzzer gives */
	memset(f.a.buf, 0x5a, 512);
	{
		/* g: c negotiates (require) with d, whose hellos are lost
		 * (d has no policy and never answers). */
		static const struct tconn_attr ca = {
			.mtu = 1024, .timeout = 14, .retry_cnt = 7,
			.rnr_retry = 7, .min_rnr_timer = 1,
			.access = UR_ACCESS_REMOTE_WRITE };

		tfix_init_dev(&g, UR_QPT_RC, &ca, dev_setup, key);
		g.net.f.loss = 1.0;
		g.net.f.drop_hellos = 1 << 30;
	}
	if (tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 512, (uintptr_t)f.b.buf,
		      f.b.mr->rkey, UR_SEND_SIGNALED) || !sealed_len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[4096];
	uint32_t len;
	bool same;

	if (!sealed_len)
		setup();
	if (!size)
		return 0;
	if (data[0] == 0xfe) {
		struct ur_crypt_hello h;
		struct ur_rxinfo ri;

		(void)ur_crypt_hello_parse(data + 1, size - 1, &h);
		tnet_rxinfo(1, 0, &ri); /* from d's address */
		(void)ur_dev_crypt_hello_rx(&g.net.nodes[0].dev, data + 1,
					    size - 1, &ri, g.net.now);
		if (ur_qp_crypt_neg(g.a.qp) != UR_CRYPT_NEG_PENDING)
			abort();
		return 0;
	}
	if (!(data[0] & 1)) {
		len = (uint32_t)(size - 1 < sizeof(pkt) ? size - 1 : sizeof(pkt));
		memcpy(pkt, data + 1, len);
	} else {
		uint32_t cut = data[0] >> 1;

		len = sealed_len - (cut < sealed_len ? cut : 0);
		memcpy(pkt, sealed, len);
		for (size_t i = 1; i < size && i - 1 < len; i++)
			pkt[i - 1] ^= data[i];
	}
	same = len == sealed_len && !memcmp(pkt, sealed, len);
	memset(f.b.buf, 0, 4096);
	(void)tnet_inject(&f.net, 0, 1, pkt, len);
	if (f.b.qp->state != UR_QPS_RTS)
		abort();
	if (!same && !ur_test_all(f.b.buf, 0, 4096))
		abort();
	return 0;
}
