// SPDX-License-Identifier: MIT
/*
 * Encryption (docs/wire.md "Encryption", docs/security.md): the libgcrypt
 * primitives against published vectors (AES-256-GCM: McGrew-Viega GCM test
 * case 16, the NIST SP 800-38D set; SM4-GCM: RFC 8998 A.1; HKDF: RFC 5869
 * A.1), then a connected pair on virtual time (a = 10.0.0.1, b = 10.0.0.2):
 * traffic in both directions with no plaintext on the wire, and the
 * attacks a sealed QP must survive from the peer's own address: tampered
 * ciphertext, headers and tag, a replay, the wrong key, plain packets (a
 * downgrade), a forged session. Each shows nothing placed, no completion,
 * the QP in RTS and its traffic going on; each has a control that lands.
 */
#include "tfix.h"
#include "ur_crypt.h"
#include "ur_qp_priv.h"

#include <stdlib.h>
#include <string.h>

static void unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		ASSERT(sscanf(s + 2 * i, "%2x", &v) == 1);
		out[i] = (uint8_t)v;
	}
}

static const struct vec {
	unsigned int alg;
	const char *key, *iv, *aad, *pt, *ct, *tag;
} vecs[] = {
	/* GCM spec (McGrew, Viega 2005) test case 16, AES-256. */
	{ UR_CRYPT_AES256GCM,
	  "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "cafebabefacedbaddecaf888",
	  "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
	  "76fc6ece0f4e1768cddf8853bb2d551b" },
	/* RFC 8998 A.1, SM4-GCM. */
	{ UR_CRYPT_SM4GCM, "0123456789abcdeffedcba9876543210",
	  "00001234567800000000abcd",
	  "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	  "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbccccccccccccccccdddddddddddddddd"
	  "eeeeeeeeeeeeeeeeffffffffffffffffeeeeeeeeeeeeeeeeaaaaaaaaaaaaaaaa",
	  "17f399f08c67d5ee19d0dc9969c4bb7d5fd46fd3756489069157b282bb200735"
	  "d82710ca5c22f0ccfa7cbf93d496ac15a56834cbcf98c397b4024a2691233b8d",
	  "83de3541e4c2b58177e065a9bf7b62ec" },
};

static void t_vectors(void)
{
	for (size_t v = 0; v < sizeof(vecs) / sizeof(vecs[0]); v++) {
		const struct vec *x = &vecs[v];
		size_t kl = ur_crypt_key_len(x->alg), al = strlen(x->aad) / 2;
		size_t n = strlen(x->pt) / 2;
		uint8_t key[32], iv[12], aad[64], pt[64], ct[64], tag[16];
		uint8_t out[64], got[16];

		ASSERT_EQ(kl * 2, strlen(x->key));
		unhex(x->key, key, kl);
		unhex(x->iv, iv, 12);
		unhex(x->aad, aad, al);
		unhex(x->pt, pt, n);
		unhex(x->ct, ct, n);
		unhex(x->tag, tag, 16);
		ASSERT_EQ(ur_crypt_aead(x->alg, key, iv, aad, al, pt, out, n,
					got, true), 0);
		ASSERT_MEM_EQ(out, ct, n);
		ASSERT_MEM_EQ(got, tag, 16);
		ASSERT_EQ(ur_crypt_aead(x->alg, key, iv, aad, al, ct, out, n,
					tag, false), 0);
		ASSERT_MEM_EQ(out, pt, n);
		/* One bit anywhere: ciphertext, data, tag. */
		ct[n / 2] ^= 1;
		ASSERT_EQ(ur_crypt_aead(x->alg, key, iv, aad, al, ct, out, n,
					tag, false), -EBADMSG);
		ct[n / 2] ^= 1;
		aad[0] ^= 0x80;
		ASSERT_EQ(ur_crypt_aead(x->alg, key, iv, aad, al, ct, out, n,
					tag, false), -EBADMSG);
		aad[0] ^= 0x80;
		tag[15] ^= 1;
		ASSERT_EQ(ur_crypt_aead(x->alg, key, iv, aad, al, ct, out, n,
					tag, false), -EBADMSG);
	}
	ASSERT_EQ(ur_crypt_aead(7, (const uint8_t *)"", NULL, NULL, 0, NULL,
				NULL, 0, NULL, true), -EINVAL);
}

/* RFC 5869 A.1 (HKDF-SHA256, test case 1). */
static void t_hkdf(void)
{
	uint8_t ikm[22], salt[13], info[10], okm[42], want[42];

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	unhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
	      "34007208d5b887185865", want, 42);
	ASSERT_EQ(ur_crypt_hkdf(salt, sizeof(salt), ikm, sizeof(ikm), info,
				sizeof(info), okm, sizeof(okm)), 0);
	ASSERT_MEM_EQ(okm, want, 42);
	ASSERT_EQ(ur_crypt_alg_parse("sm4-gcm"), UR_CRYPT_SM4GCM);
	ASSERT_EQ(ur_crypt_alg_parse("aes-256-gcm"), UR_CRYPT_AES256GCM);
	ASSERT_EQ(ur_crypt_alg_parse("des"), -EINVAL);
}

/* ---- a sealed pair ------------------------------------------------------- */
#define EVIL_NODE 8 /* 10.0.0.9: nobody's peer */
static const uint8_t key_a[32] = "uroce test key, 32 bytes long..";
static const uint8_t key_x[32] = "another key, also 32 bytes long";

/* What the tap keeps: every packet, whether any carried the plaintext. */
struct cap {
	const uint8_t *secret;  /* 32 bytes that must never be on the wire */
	int leaks, sealed, total;
	int big;                /* sealed packets of more than 4096 bytes */
	uint8_t last[UR_JUMBO_MTU + 256]; /* the last request a sent to b */
	uint32_t last_len;
};

static void tap(struct tnet *net, const uint8_t *d, uint32_t len, void *arg)
{
	struct cap *c = arg;
	struct ur_pkt p;

	(void)net;
	c->total++;
	c->sealed += ur_bth_ext_crypt(d);
	if (c->secret && len >= 32 && memmem(d, len, c->secret, 32))
		c->leaks++;
	if (ur_pkt_decode(d, len, &p) == UR_DEC_OK && p.trailer &&
	    p.payload_len > 4096)
		c->big++;
	if (ur_pkt_decode(d, len, &p) == UR_DEC_OK && (p.mask & UR_OPF_REQ) &&
	    len <= sizeof(c->last)) {
		memcpy(c->last, d, len);
		c->last_len = len;
	}
}

static void pair(struct tfix *f, struct cap *c, unsigned int alg,
		 const uint8_t *ka, const uint8_t *kb)
{
	tfix_init(f, UR_QPT_RC, NULL);
	if (ka)
		ASSERT_EQ(ur_qp_set_crypt(f->a.qp, alg, ka), 0);
	if (kb)
		ASSERT_EQ(ur_qp_set_crypt(f->b.qp, alg, kb), 0);
	memset(c, 0, sizeof(*c));
	f->net.tap = tap;
	f->net.tap_arg = c;
}

/* WRITE, SEND, READ and FETCH_ADD both ways, sealed: the data arrives,
 * no 32 bytes of it are on the wire, every packet is sealed. The same with
 * encryption off shows the pattern in clear (the leak check can fail). */
static void roundtrip(unsigned int alg, bool on)
{
	struct ur_counters *cb;
	struct tfix f;
	struct cap c;

	pair(&f, &c, alg, on ? key_a : NULL, on ? key_a : NULL);
	cb = &f.net.nodes[1].dev.cnt;
	f.net.place = true; /* the engine's placement must decline */
	tfix_fill(f.a.buf, 65536, 11);
	c.secret = f.a.buf + 3000;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 65536,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 65536);
	ASSERT_EQ(tfix_recv(&f.b, 2, 100000, 5000), 0);
	tfix_fill(f.a.buf + 70000, 5000, 12);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 3, 70000, 5000, 0, 0,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 3);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).byte_len, 5000);
	ASSERT_MEM_EQ(f.b.buf + 100000, f.a.buf + 70000, 5000);
	/* b READs from a, a answers with sealed READ responses. */
	tfix_fill(f.a.buf + 200000, 9000, 13);
	ASSERT_EQ(tfix_send(&f.b, UR_WR_RDMA_READ, 4, 300000, 9000,
			    (uintptr_t)f.a.buf + 200000, f.a.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_run_ok(&f, &f.b.scq).wr_id, 4);
	ASSERT_MEM_EQ(f.b.buf + 300000, f.a.buf + 200000, 9000);
	memset(f.a.buf + 400000, 0, 8);
	f.a.buf[400000] = 40;
	ASSERT_EQ(ur_qp_post_send(f.b.qp, &(struct ur_send_wr){
			.wr_id = 5, .opcode = UR_WR_ATOMIC_FETCH_AND_ADD,
			.flags = UR_SEND_SIGNALED,
			.remote_addr = (uintptr_t)f.a.buf + 400000,
			.rkey = f.a.mr->rkey, .compare_add = 2,
			.sg_list = &(struct ur_sge){ (uintptr_t)f.b.buf + 500000,
						     8, f.b.mr->lkey },
			.num_sge = 1 }, f.net.now), 0);
	ASSERT_EQ(tfix_run_ok(&f, &f.b.scq).wr_id, 5);
	ASSERT_EQ(f.a.buf[400000], 42);
	ASSERT_EQ(f.b.buf[500000], 40);
	if (on) {
		ASSERT_EQ(c.leaks, 0);
		ASSERT_EQ(c.sealed, c.total);
		ASSERT_EQ(f.net.placed, 0);
		ASSERT_GT(cb->rx_opened, 60);
		ASSERT_EQ(cb->rx_drop_auth + cb->rx_drop_replay, 0);
		ASSERT_EQ(ur_qp_crypt_state(f.a.qp) & 3, 3);
		ASSERT_EQ(ur_qp_crypt_state(f.b.qp) >> 8, alg);
	} else {
		ASSERT_GT(c.leaks, 0);
		ASSERT_EQ(c.sealed, 0);
		ASSERT_GT(f.net.placed, 0);
	}
	tfix_fini(&f);
}

static void t_roundtrip_aes(void) { roundtrip(UR_CRYPT_AES256GCM, true); }
static void t_roundtrip_sm4(void) { roundtrip(UR_CRYPT_SM4GCM, true); }
static void t_roundtrip_plain(void) { roundtrip(UR_CRYPT_AES256GCM, false); }

/* Capture a's sealed WRITE to b (the network loses it), then inject it
 * from a's own address with one bit changed in turn in the headers (the
 * additional data), the ciphertext, the trailer's sequence number and
 * the tag: all dropped, nothing placed. The copy as sent lands once;
 * again, it is a replay. a's retransmission then completes the WRITE. */
static void t_tamper_replay(void)
{
	static uint8_t pkt[8192];
	struct ur_counters *cb;
	struct tfix f;
	struct cap c;
	uint32_t len, pay;
	const uint32_t at[] = { 4 /* BTH byte 4 */, 9 /* PSN */,
				16 /* RETH VA */, 24 /* RETH rkey */,
				28 + 100 /* ciphertext */ };

	pair(&f, &c, UR_CRYPT_AES256GCM, key_a, key_a);
	cb = &f.net.nodes[1].dev.cnt;
	tfix_fill(f.a.buf, 512, 5);
	memset(f.b.buf, 0, 4096);
	f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_ONLY;
	f.net.f.drop_count = 1;
	f.net.f.delay_ns = 1000000;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 512,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	tnet_run_until(&f.net, f.net.now + 10000);
	ASSERT_GT(c.last_len, 0);
	len = c.last_len;
	pay = len - 4 - UR_CRYPT_TRAILER; /* ICRC, trailer */
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]) + 2; i++) {
		uint32_t off = i < sizeof(at) / sizeof(at[0]) ? at[i]
			     : i == sizeof(at) / sizeof(at[0]) ? pay + 8 + 7
							       : len - 5;

		memcpy(pkt, c.last, len);
		pkt[off] ^= 0x10;
		ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, len), 0);
		ASSERT_EQ(cb->rx_drop_auth, i + 1);
	}
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	tfix_no_cqe(&f.b.rcq);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	/* The control: unchanged, it lands. */
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, c.last, len), 0);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 512);
	/* Replayed after b cleared its buffer: dropped, not written again. */
	memset(f.b.buf, 0, 512);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, c.last, len), 0);
	ASSERT_EQ(cb->rx_drop_replay, 1);
	ASSERT(ur_test_all(f.b.buf, 0, 512));
	/* a's retransmission (a new sequence number) is a duplicate to b,
	 * answered; a's WRITE completes, the pair goes on. */
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT(ur_test_all(f.b.buf, 0, 512));
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 2, 0, 512,
			    (uintptr_t)f.b.buf + 1024, f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 2);
	ASSERT_MEM_EQ(f.b.buf + 1024, f.a.buf, 512);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

/* b holds another key (or another algorithm): nothing of a's lands, b's
 * QP stays RTS, its counter says why. */
static void t_wrong_key(void)
{
	struct ur_counters *cb;
	struct tfix f;
	struct cap c;

	pair(&f, &c, UR_CRYPT_AES256GCM, key_a, key_x);
	cb = &f.net.nodes[1].dev.cnt;
	memset(f.b.buf, 0, 4096);
	tfix_fill(f.a.buf, 4096, 6);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 4096,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	tnet_run(&f.net, f.net.now + 50ull * 1000 * 1000);
	ASSERT_GT(cb->rx_drop_auth, 3);
	ASSERT_EQ(cb->rx_opened, 0);
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);

	/* Same key, other algorithm: also refused. */
	pair(&f, &c, UR_CRYPT_AES256GCM, key_a, NULL);
	ASSERT_EQ(ur_qp_set_crypt(f.b.qp, UR_CRYPT_SM4GCM, key_a), 0);
	cb = &f.net.nodes[1].dev.cnt;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 256,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	tnet_run(&f.net, f.net.now + 20ull * 1000 * 1000);
	ASSERT_GT(cb->rx_drop_auth, 0);
	ASSERT_EQ(cb->rx_opened, 0);
	tfix_fini(&f);
}

/* A downgrade: b is sealed, a sends plain (a peer without the key, or an
 * attacker with the peer's address dropping the extension): nothing lands
 * at b, and b's sealed answers are nothing to a plain QP either. Crafted
 * plain packets and a forged session id from a's address too. */
static void t_downgrade(void)
{
	static uint8_t pkt[8192], data[512];
	struct ur_counters *ca, *cb;
	struct ur_pkt x = { 0 };
	struct tfix f;
	struct cap c;
	int n;

	pair(&f, &c, UR_CRYPT_AES256GCM, NULL, key_a);
	ca = &f.net.nodes[0].dev.cnt;
	cb = &f.net.nodes[1].dev.cnt;
	memset(f.b.buf, 0, 4096);
	memset(data, 0xaa, sizeof(data));
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 1024,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_recv(&f.b, 9, 8192, 512), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 2, 0, 256, 0, 0,
			    UR_SEND_SIGNALED), 0);
	tnet_run(&f.net, f.net.now + 20ull * 1000 * 1000);
	ASSERT_GT(cb->rx_drop_auth, 1);
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	tfix_no_cqe(&f.b.rcq);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);

	/* b's own sealed request to plain a: dropped there too. */
	ASSERT_EQ(tfix_send(&f.b, UR_WR_RDMA_WRITE, 3, 0, 256,
			    (uintptr_t)f.a.buf + 8192, f.a.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tnet_run(&f.net, f.net.now + 1000000);
	ASSERT_GT(ca->rx_drop_auth, 0);

	/* Crafted from a's address at b's expected PSN: plain, with the
	 * extension bit and no valid trailer, with a forged session id. */
	x.h.opcode = UR_OP_RC_RDMA_WRITE_ONLY;
	x.h.pkey = 0xffff;
	x.h.dqpn = f.b.qp->qpn;
	x.h.psn = f.ca.psn_a;
	x.reth = (struct ur_reth){ (uintptr_t)f.b.buf, f.b.mr->rkey, 480 };
	n = ur_pkt_encode(pkt, sizeof(pkt), &x, data, 512);
	ASSERT_GT(n, 0);
	cb->rx_drop_auth = 0;
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, (uint32_t)n), 0);
	pkt[4] |= UR_BTH_EXT_CRYPT;
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, (uint32_t)n), 0);
	for (int i = 0; i < 8; i++) {
		pkt[12 + 16 + 480 + i] = (uint8_t)(i * 37 + 1); /* sid */
		ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, (uint32_t)n), 0);
	}
	ASSERT_EQ(cb->rx_drop_auth, 10);
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	ASSERT_EQ(ur_qp_crypt_state(f.b.qp) & 2, 0); /* no session taken */
	tfix_fini(&f);
}

/* A new key each 2^24 packets: a starts just before an epoch boundary
 * and streams across it, b follows. */
static void t_rekey(void)
{
	struct tfix f;
	struct cap c;

	pair(&f, &c, UR_CRYPT_SM4GCM, key_a, key_a);
	f.a.qp->priv->crypt.tx_seq = (1ull << UR_CRYPT_EPOCH_SHIFT) - 7;
	tfix_fill(f.a.buf, 65536, 9);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 65536,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 65536);
	ASSERT_EQ(f.b.qp->priv->crypt.rx_top >> UR_CRYPT_EPOCH_SHIFT, 1);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_auth, 0);
	tfix_fini(&f);
}

/* Under loss, duplication and reordering every retransmission is sealed
 * afresh: the data still arrives, and b's replay window takes no packet
 * twice (a duplicated packet is counted, not run again). */
static void t_faults(void)
{
	struct ur_counters *cb;
	struct tfix f;
	struct cap c;

	pair(&f, &c, UR_CRYPT_AES256GCM, key_a, key_a);
	cb = &f.net.nodes[1].dev.cnt;
	f.net.f = (struct tfault){ .loss = 0.05, .dup = 0.05, .reorder = 0.1,
				   .delay_ns = 20000, .jitter_ns = 30000 };
	tfix_fill(f.a.buf, 1 << 20, 21);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 1 << 20,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 1 << 20);
	ASSERT_EQ(cb->rx_drop_auth, 0);
	ASSERT_GT(cb->rx_drop_replay, 0);
	tfix_fini(&f);
}

/* Sealed jumbo packets (docs/wire.md "Jumbo packets"): once b's answers
 * named 16 KiB, a's WRITEs leave in 16 KiB packets with their trailer,
 * under loss, duplication and reordering; every byte lands, none in clear,
 * nothing placed before its tag. A 16 KiB packet replayed is dropped as a
 * replay; with a fresh sequence number (the IV changes) its tag fails and
 * b's memory stays as it was. */
static void t_jumbo(void)
{
	static const struct tconn_attr ca = {
		.mtu = 4096, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .max_rd_atomic = 4, .access = ACC_ALL,
	};
	static uint8_t pkt[UR_JUMBO_MTU + 256];
	struct ur_counters *cb;
	struct tfix f;
	struct cap c;
	uint32_t len;

	tfix_init(&f, UR_QPT_RC, &ca);
	f.a.node->dev.jumbo_max = f.b.node->dev.jumbo_max = UR_JUMBO_MTU;
	/* Either order: jumbo then the key, the key then jumbo. */
	ASSERT_EQ(ur_qp_set_jumbo(f.a.qp, true), 0);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, UR_CRYPT_AES256GCM, key_a), 0);
	ASSERT_EQ(ur_qp_set_crypt(f.b.qp, UR_CRYPT_AES256GCM, key_a), 0);
	ASSERT_EQ(f.b.qp->priv->crypt.buf_cap, 4096); /* 16 KiB only for jumbo */
	ASSERT_EQ(ur_qp_set_jumbo(f.b.qp, true), 0);
	ASSERT_EQ(f.a.qp->priv->crypt.buf_cap, UR_JUMBO_MTU);
	ASSERT_EQ(f.b.qp->priv->crypt.buf_cap, UR_JUMBO_MTU);
	memset(&c, 0, sizeof(c));
	f.net.tap = tap;
	f.net.tap_arg = &c;
	f.net.place = true; /* the engine's placement must decline */
	cb = &f.net.nodes[1].dev.cnt;
	tfix_fill(f.a.buf, 1 << 20, 31);
	c.secret = f.a.buf + 70000;
	/* The first WRITE's answers carry b's bits. */
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 8192,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT_EQ(ur_qp_jumbo_state(f.a.qp) >> 8, 16);
	f.net.f = (struct tfault){ .loss = 0.03, .dup = 0.03, .reorder = 0.1,
				   .delay_ns = 20000, .jitter_ns = 30000 };
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 2, 0, 1 << 20,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 2);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 1 << 20);
	ASSERT_GT(c.big, 50);
	ASSERT_EQ(c.leaks, 0);
	ASSERT_EQ(c.sealed, c.total);
	ASSERT_EQ(f.net.placed, 0);
	ASSERT_EQ(cb->rx_drop_auth, 0);
	/* The last request a sent is the 1 MiB WRITE's LAST, 16 KiB. */
	len = c.last_len;
	ASSERT_GT(len, UR_JUMBO_MTU);
	f.net.f = (struct tfault){ 0 };
	memset(f.b.buf, 0, 1 << 20);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, c.last, len), 0);
	ASSERT_GT(cb->rx_drop_replay, 0);
	memcpy(pkt, c.last, len);
	ur_put64(pkt + len - 4 - UR_CRYPT_TRAILER + 8,
		 f.b.qp->priv->crypt.rx_top + 1);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, len), 0);
	ASSERT_EQ(cb->rx_drop_auth, 1);
	ASSERT(ur_test_all(f.b.buf, 0, 1 << 20));
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

/* What refuses what: UD, SR, an unknown algorithm. */
static void t_refuse(void)
{
	struct ur_sr_params sr;
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, 9, key_a), -EINVAL);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, UR_CRYPT_AES256GCM, key_a), 0);
	ur_sr_params_default(&sr);
	ASSERT_EQ(ur_qp_set_sr(f.a.qp, &sr), -EINVAL);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, UR_CRYPT_NONE, NULL), 0);
	ASSERT_EQ(ur_qp_crypt_state(f.a.qp), 0);
	ASSERT_EQ(ur_qp_set_sr(f.a.qp, &sr), 0);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, UR_CRYPT_AES256GCM, key_a), -EINVAL);
	tfix_fini(&f);
	tfix_init(&f, UR_QPT_UD, NULL);
	ASSERT_EQ(ur_qp_set_crypt(f.a.qp, UR_CRYPT_AES256GCM, key_a), -EINVAL);
	tfix_fini(&f);
}

/* ---- negotiation (ur_crypt_neg.c) ------------------------------------------ */
struct devcfg {
	uint8_t policy[2];
	const uint8_t *key[2];
	unsigned int alg;
};

static void devcfg_apply(struct ur_dev *dev, int node, void *arg)
{
	const struct devcfg *d = arg;

	dev->crypt_policy = d->policy[node];
	dev->crypt_alg = d->policy[node] ? (uint8_t)d->alg : 0;
	if (d->key[node])
		memcpy(dev->crypt_key, d->key[node], 32);
}

/* A pair whose devices have policies; the QPs negotiate at RTR. */
static void neg_pair(struct tfix *f, struct cap *c, uint8_t pa, uint8_t pb,
		     const uint8_t *kb)
{
	struct devcfg d = { { pa, pb }, { key_a, kb }, UR_CRYPT_SM4GCM };

	tfix_init_dev(f, UR_QPT_RC, NULL, devcfg_apply, &d);
	memset(c, 0, sizeof(*c));
	f->net.tap = tap;
	f->net.tap_arg = c;
}

/* WRITE 8 KiB a -> b with a pattern; whether it lands. */
static bool neg_write(struct tfix *f, uint64_t wr_id)
{
	struct ur_cqe e[2];

	tfix_fill(f->a.buf, 8192, (uint32_t)wr_id);
	memset(f->b.buf, 0, 8192);
	ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_WRITE, wr_id, 0, 8192,
			    (uintptr_t)f->b.buf, f->b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tnet_run(&f->net, f->net.now + 10ull * 1000 * 1000 * 1000);
	if (ur_cq_poll(&f->a.scq, e, 1) != 1 || e[0].status != UR_WC_SUCCESS)
		return false;
	return !memcmp(f->b.buf, f->a.buf, 8192);
}

/* require/require and allow/allow with the same key: sealed, data
 * through, no plaintext; a WRITE posted while the hellos travel waits
 * for them. */
static void t_neg_sealed(void)
{
	for (int i = 0; i < 2; i++) {
		uint8_t pol = i ? UR_CRYPT_POLICY_ALLOW : UR_CRYPT_POLICY_REQUIRE;
		struct tfix f;
		struct cap c;

		neg_pair(&f, &c, pol, pol, key_a);
		ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_PENDING);
		c.secret = f.a.buf + 4000;
		ASSERT(neg_write(&f, 1));
		ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_SEALED);
		ASSERT_EQ(ur_qp_crypt_neg(f.b.qp), UR_CRYPT_NEG_SEALED);
		ASSERT_EQ(c.leaks, 0);
		ASSERT_EQ(c.sealed, c.total);
		ASSERT_GT(c.total, 8);
		ASSERT_GE(f.net.hellos, 3);
		ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_auth, 0);
		tfix_fini(&f);
	}
}

/* allow against a peer without a policy (a standard device, as far as
 * negotiation goes): no answer, plain after the wait, data through. */
static void t_neg_allow_plain(void)
{
	struct tfix f;
	struct cap c;

	neg_pair(&f, &c, UR_CRYPT_POLICY_ALLOW, UR_CRYPT_POLICY_OFF, NULL);
	c.secret = f.a.buf + 4000;
	ASSERT(neg_write(&f, 1));
	ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_PLAIN);
	ASSERT_EQ(c.sealed, 0);
	ASSERT_GT(c.leaks, 0); /* plain, as allowed */
	ASSERT_EQ(f.net.nodes[0].dev.cnt.crypt_neg_timeout, 1);
	ASSERT_GE(f.net.now, UR_CRYPT_NEG_ALLOW_NS);
	/* b negotiates nothing: a's hellos are out of state there, not
	 * authentication failures. */
	ASSERT_GT(f.net.nodes[1].dev.cnt.rx_drop_bad_state, 0);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_auth, 0);
	tfix_fini(&f);
}

/* require against a peer without a policy, with another key, or with
 * every hello dropped (a downgrade attempt): nothing leaves but hellos,
 * nothing is taken, the QP fails and its WRITE completes in error. allow
 * with the hellos dropped goes plain: that is what allow means. */
static void t_neg_fail_closed(void)
{
	for (int i = 0; i < 3; i++) {
		struct tfix f;
		struct cap c;
		struct ur_cqe e;

		if (i == 0)
			neg_pair(&f, &c, UR_CRYPT_POLICY_REQUIRE,
				 UR_CRYPT_POLICY_OFF, NULL);
		else
			neg_pair(&f, &c, UR_CRYPT_POLICY_REQUIRE,
				 UR_CRYPT_POLICY_REQUIRE, i == 1 ? key_x : key_a);
		if (i == 2)
			f.net.f.drop_hellos = 1 << 30;
		memset(f.b.buf, 0, 8192);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 8192,
				    (uintptr_t)f.b.buf, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		/* b (plain in case 0) sends a's QP a WRITE too. */
		ASSERT_EQ(tfix_send(&f.b, UR_WR_RDMA_WRITE, 2, 0, 512,
				    (uintptr_t)f.a.buf + 65536, f.a.mr->rkey,
				    0), 0);
		tnet_run(&f.net, f.net.now + 10ull * 1000 * 1000 * 1000);
		ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_FAILED);
		ASSERT_EQ(f.a.qp->state, UR_QPS_ERR);
		ASSERT_EQ(ur_cq_poll(&f.a.scq, &e, 1), 1);
		ASSERT_NE(e.status, UR_WC_SUCCESS);
		ASSERT(ur_test_all(f.b.buf, 0, 8192));
		ASSERT(ur_test_all(f.a.buf + 65536, 0, 512));
		ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_sealed, 0);
		ASSERT_EQ(f.net.nodes[0].dev.cnt.rx_opened, 0);
		if (i == 1)
			ASSERT_GT(f.net.nodes[0].dev.cnt.rx_drop_auth +
					  f.net.nodes[1].dev.cnt.rx_drop_auth, 1);
		tfix_fini(&f);
	}
	{
		struct tfix f;
		struct cap c;

		neg_pair(&f, &c, UR_CRYPT_POLICY_ALLOW, UR_CRYPT_POLICY_ALLOW,
			 key_a);
		f.net.f.drop_hellos = 1 << 30;
		ASSERT(neg_write(&f, 1));
		ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_PLAIN);
		ASSERT_EQ(ur_qp_crypt_neg(f.b.qp), UR_CRYPT_NEG_PLAIN);
		tfix_fini(&f);
	}
}

/* Hellos lost at random, and forged ones: the pair still agrees, and a
 * hello from another address or with one bit changed is not taken. */
static void t_neg_loss_forgery(void)
{
	static uint8_t mad[UR_CRYPT_HELLO_LEN];
	struct ur_crypt_hello h;
	struct ur_rxinfo ri;
	struct tfix f;
	struct cap c;
	uint64_t auth;

	neg_pair(&f, &c, UR_CRYPT_POLICY_REQUIRE, UR_CRYPT_POLICY_REQUIRE,
		 key_a);
	f.net.f.hello_loss = 0.5;
	ASSERT(neg_write(&f, 1));
	ASSERT_EQ(ur_qp_crypt_neg(f.b.qp), UR_CRYPT_NEG_SEALED);
	tfix_fini(&f);

	/* Capture a's first hello (to b, pending) and replay it altered. */
	neg_pair(&f, &c, UR_CRYPT_POLICY_REQUIRE, UR_CRYPT_POLICY_REQUIRE,
		 key_a);
	ASSERT_EQ(f.net.q.n, 2); /* a's and b's hellos */
	for (size_t i = 0; i < f.net.q.n; i++)
		if (tnet_queued(&f.net, i)->hello && tnet_queued(&f.net, i)->dst == 1)
			memcpy(mad, tnet_queued(&f.net, i)->data, sizeof(mad));
	ASSERT_EQ(ur_crypt_hello_parse(mad, sizeof(mad), &h), 0);
	ASSERT_EQ(h.dst_qpn, f.b.qp->qpn);
	auth = f.net.nodes[1].dev.cnt.rx_drop_auth;
	tnet_rxinfo(EVIL_NODE, 1, &ri); /* from elsewhere */
	ASSERT_EQ(ur_dev_crypt_hello_rx(&f.net.nodes[1].dev, mad, sizeof(mad),
					&ri, f.net.now), -EACCES);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_offpath, 1);
	tnet_rxinfo(0, 1, &ri);
	for (int off = 24; off < 104; off += 7) {
		mad[off] ^= 0x01;
		ASSERT_NE(ur_dev_crypt_hello_rx(&f.net.nodes[1].dev, mad,
						sizeof(mad), &ri, f.net.now), 0);
		mad[off] ^= 0x01;
	}
	ASSERT_GE(f.net.nodes[1].dev.cnt.rx_drop_auth - auth, 10);
	ASSERT_EQ(ur_qp_crypt_neg(f.b.qp), UR_CRYPT_NEG_PENDING);
	/* The unaltered copy is a's real hello: b takes it. */
	ASSERT_EQ(ur_dev_crypt_hello_rx(&f.net.nodes[1].dev, mad, sizeof(mad),
					&ri, f.net.now), 0);
	ASSERT(neg_write(&f, 2));
	ASSERT_EQ(ur_qp_crypt_neg(f.a.qp), UR_CRYPT_NEG_SEALED);
	tfix_fini(&f);
}

static const struct ur_test_case tests[] = {
	{ "vectors", t_vectors },
	{ "hkdf", t_hkdf },
	{ "roundtrip_aes", t_roundtrip_aes },
	{ "roundtrip_sm4", t_roundtrip_sm4 },
	{ "roundtrip_plain", t_roundtrip_plain },
	{ "tamper_replay", t_tamper_replay },
	{ "wrong_key", t_wrong_key },
	{ "downgrade", t_downgrade },
	{ "rekey", t_rekey },
	{ "faults", t_faults },
	{ "jumbo", t_jumbo },
	{ "refuse", t_refuse },
	{ "neg_sealed", t_neg_sealed },
	{ "neg_allow_plain", t_neg_allow_plain },
	{ "neg_fail_closed", t_neg_fail_closed },
	{ "neg_loss_forgery", t_neg_loss_forgery },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)
