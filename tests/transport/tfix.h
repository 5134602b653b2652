/* SPDX-License-Identifier: MIT */
/* A connected QP pair with buffers, for the transport tests. */
#ifndef TFIX_H
#define TFIX_H

#include "tnet.h"
#include "ur_test.h"

#define TBUF (2u << 20)
#define ACC_ALL (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |            \
		 UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_ATOMIC)

struct tside {
	struct tnode *node;
	struct ur_cq scq, rcq;
	struct ur_qp *qp;
	uint8_t *buf;        /* TBUF bytes, registered as mr */
	struct ur_mr *mr;
};

struct tfix {
	struct tnet net;
	struct tside a, b;
	struct tconn_attr ca;
};

void tfix_init(struct tfix *f, uint32_t type, const struct tconn_attr *ca);
/* The same, with @setup(dev, node, arg) run on each node's device before
 * its QP is created (device-wide settings such as the encryption policy). */
void tfix_init_dev(struct tfix *f, uint32_t type, const struct tconn_attr *ca,
		   void (*setup)(struct ur_dev *dev, int node, void *arg),
		   void *arg);
void tfix_fini(struct tfix *f);
/* Side @s on node @node without a QP: its CQs (@cq_depth), buffer and MR
 * (for tests that make their own QPs; tfix_fini frees them). */
void tfix_side(struct tfix *f, struct tside *s, int node, uint32_t cq_depth);
/* Expect exactly one CQE on @cq; returns it. */
struct ur_cqe tfix_cqe(struct ur_cq *cq);
void tfix_no_cqe(struct ur_cq *cq);
int tfix_send(struct tside *s, uint32_t opcode, uint64_t wr_id,
	      uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
	      uint32_t flags);
int tfix_recv(struct tside *s, uint64_t wr_id, uint32_t off, uint32_t len);
void tfix_fill(uint8_t *p, uint32_t len, uint32_t seed);
/* What a tap saw of an extension bit (docs/wire.md "Extensions"): packets
 * per sender (0: a, 1: b), and how many carried the bit. */
struct tfix_bits {
	uint64_t req[2], req_bit[2], ans[2], ans_bit[2];
};
/* For a tap: decode a packet on the wire and count it in @w with @bit
 * (BTH byte 4) in mind; *from = 0 if a sent it (to b's QP), 1 if b did.
 * False for a packet that does not decode. */
bool tfix_tap_count(const struct tfix *f, struct tfix_bits *w, uint8_t bit,
		    const uint8_t *d, uint32_t len, struct ur_pkt *pkt,
		    int *from);
/* FNV-1a-style hash @h of a decoded packet's bytes as a standard peer
 * would compare them: a RETH's address taken relative to @buf (the
 * target buffer: each fixture's buffers lie elsewhere) and no ICRC (it
 * covers that address). */
uint64_t tfix_wire_hash(uint64_t h, const uint8_t *d, uint32_t len,
			const struct ur_pkt *pkt, const void *buf);
/* Run the network until it is idle (10 s of virtual time at most) and
 * expect one successful CQE on @cq; returns it. */
struct ur_cqe tfix_run_ok(struct tfix *f, struct ur_cq *cq);

#endif
