// SPDX-License-Identifier: MIT
/*
 * The opcode table: one row per IB transport opcode (IBTA vol. 1 table 38,
 * 9.2 and 9.3), saying which extension headers follow the BTH, where they
 * start, and how the packet is classified. Code asks this table instead of
 * switching on opcodes.
 *
 * Header order after the BTH follows IBTA 9.2: DETH, then RETH or AtomicETH,
 * then ImmDt; AETH then AtomicAckETH; IETH alone; FETH then RETH (FLUSH,
 * IBTA 1.5 memory placement extensions). XRC requests: XRCETH first.
 *
 * UR_OPF_ACK marks every responder-to-requester packet (ACKNOWLEDGE,
 * ATOMIC_ACKNOWLEDGE and the RDMA READ responses, which acknowledge
 * implicitly, IBTA 9.7.5.1).
 */
#include "ur_wire.h"

#define BTH UR_BTH_LEN

/*
 * Payload-carrying request rows shared by RC, UC and XRC (sends and
 * writes). @B is where the headers after the BTH start (XRC: after the
 * XRCETH), @XM the extra mask bits and @XO the XRCETH's offset (0: none).
 */
#define SEND_ROWS(T, base, B, XM, XO)                                          \
	[base + 0x00] = {                                                      \
		.name = #T "_SEND_FIRST",                                      \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_SEND |       \
			UR_OPF_FIRST,                                          \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x01] = {                                                      \
		.name = #T "_SEND_MIDDLE",                                     \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_SEND |       \
			UR_OPF_MIDDLE,                                         \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x02] = {                                                      \
		.name = #T "_SEND_LAST",                                       \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_SEND |       \
			UR_OPF_LAST,                                           \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x03] = {                                                      \
		.name = #T "_SEND_LAST_IMM",                                   \
		.mask = XM | UR_HDR_IMMDT | UR_HDR_PAYLOAD | UR_OPF_REQ |      \
			UR_OPF_SEND | UR_OPF_LAST | UR_OPF_IMM,                \
		.hdr_len = B + UR_IMMDT_LEN,                                   \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_IMMDT] = B},             \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x04] = {                                                      \
		.name = #T "_SEND_ONLY",                                       \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_SEND |       \
			UR_OPF_ONLY,                                           \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x05] = {                                                      \
		.name = #T "_SEND_ONLY_IMM",                                   \
		.mask = XM | UR_HDR_IMMDT | UR_HDR_PAYLOAD | UR_OPF_REQ |      \
			UR_OPF_SEND | UR_OPF_ONLY | UR_OPF_IMM,                \
		.hdr_len = B + UR_IMMDT_LEN,                                   \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_IMMDT] = B},             \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x06] = {                                                      \
		.name = #T "_RDMA_WRITE_FIRST",                                \
		.mask = XM | UR_HDR_RETH | UR_HDR_PAYLOAD | UR_OPF_REQ |       \
			UR_OPF_WRITE | UR_OPF_FIRST,                           \
		.hdr_len = B + UR_RETH_LEN,                                    \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_RETH] = B},              \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x07] = {                                                      \
		.name = #T "_RDMA_WRITE_MIDDLE",                               \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_WRITE |      \
			UR_OPF_MIDDLE,                                         \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x08] = {                                                      \
		.name = #T "_RDMA_WRITE_LAST",                                 \
		.mask = XM | UR_HDR_PAYLOAD | UR_OPF_REQ | UR_OPF_WRITE |      \
			UR_OPF_LAST,                                           \
		.hdr_len = B,                                                  \
		.off = {[UR_ETH_XRCETH] = XO},                                 \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x09] = {                                                      \
		.name = #T "_RDMA_WRITE_LAST_IMM",                             \
		.mask = XM | UR_HDR_IMMDT | UR_HDR_PAYLOAD | UR_OPF_REQ |      \
			UR_OPF_WRITE | UR_OPF_LAST | UR_OPF_IMM,               \
		.hdr_len = B + UR_IMMDT_LEN,                                   \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_IMMDT] = B},             \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x0a] = {                                                      \
		.name = #T "_RDMA_WRITE_ONLY",                                 \
		.mask = XM | UR_HDR_RETH | UR_HDR_PAYLOAD | UR_OPF_REQ |       \
			UR_OPF_WRITE | UR_OPF_ONLY,                            \
		.hdr_len = B + UR_RETH_LEN,                                    \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_RETH] = B},              \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x0b] = {                                                      \
		.name = #T "_RDMA_WRITE_ONLY_IMM",                             \
		.mask = XM | UR_HDR_RETH | UR_HDR_IMMDT | UR_HDR_PAYLOAD |     \
			UR_OPF_REQ | UR_OPF_WRITE | UR_OPF_ONLY | UR_OPF_IMM,  \
		.hdr_len = B + UR_RETH_LEN + UR_IMMDT_LEN,                     \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_RETH] = B,               \
			[UR_ETH_IMMDT] = B + UR_RETH_LEN},                     \
		.valid = true,                                                 \
	}

/*
 * The other rows RC and XRC share (IBTA table 38, 0x0c-0x17 of each
 * group): READ request, its responses, the acknowledgements, atomics and
 * SEND with invalidate. Requests start their headers at @B; responses
 * never carry an XRCETH.
 */
#define RC_ROWS(T, base, B, XM, XO)                                            \
	[base + 0x0c] = {                                                      \
		.name = #T "_RDMA_READ_REQUEST",                               \
		.mask = XM | UR_HDR_RETH | UR_OPF_REQ | UR_OPF_READ |          \
			UR_OPF_ONLY,                                           \
		.hdr_len = B + UR_RETH_LEN,                                    \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_RETH] = B},              \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x0d] = {                                                      \
		.name = #T "_RDMA_READ_RESPONSE_FIRST",                        \
		.mask = UR_HDR_AETH | UR_HDR_PAYLOAD | UR_OPF_READ_RESP |      \
			UR_OPF_ACK | UR_OPF_FIRST,                             \
		.hdr_len = BTH + UR_AETH_LEN,                                  \
		.off = {[UR_ETH_AETH] = BTH},                                  \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x0e] = {                                                      \
		.name = #T "_RDMA_READ_RESPONSE_MIDDLE",                       \
		.mask = UR_HDR_PAYLOAD | UR_OPF_READ_RESP | UR_OPF_ACK |       \
			UR_OPF_MIDDLE,                                         \
		.hdr_len = BTH,                                                \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x0f] = {                                                      \
		.name = #T "_RDMA_READ_RESPONSE_LAST",                         \
		.mask = UR_HDR_AETH | UR_HDR_PAYLOAD | UR_OPF_READ_RESP |      \
			UR_OPF_ACK | UR_OPF_LAST,                              \
		.hdr_len = BTH + UR_AETH_LEN,                                  \
		.off = {[UR_ETH_AETH] = BTH},                                  \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x10] = {                                                      \
		.name = #T "_RDMA_READ_RESPONSE_ONLY",                         \
		.mask = UR_HDR_AETH | UR_HDR_PAYLOAD | UR_OPF_READ_RESP |      \
			UR_OPF_ACK | UR_OPF_ONLY,                              \
		.hdr_len = BTH + UR_AETH_LEN,                                  \
		.off = {[UR_ETH_AETH] = BTH},                                  \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x11] = {                                                      \
		.name = #T "_ACKNOWLEDGE",                                     \
		.mask = UR_HDR_AETH | UR_OPF_ACK | UR_OPF_ONLY,                \
		.hdr_len = BTH + UR_AETH_LEN,                                  \
		.off = {[UR_ETH_AETH] = BTH},                                  \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x12] = {                                                      \
		.name = #T "_ATOMIC_ACKNOWLEDGE",                              \
		.mask = UR_HDR_AETH | UR_HDR_ATMACK | UR_OPF_ACK |             \
			UR_OPF_ATOMIC | UR_OPF_ONLY,                           \
		.hdr_len = BTH + UR_AETH_LEN + UR_ATMACK_LEN,                  \
		.off = {[UR_ETH_AETH] = BTH,                                   \
			[UR_ETH_ATMACK] = BTH + UR_AETH_LEN},                  \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x13] = {                                                      \
		.name = #T "_COMPARE_SWAP",                                    \
		.mask = XM | UR_HDR_ATMETH | UR_OPF_REQ | UR_OPF_ATOMIC |      \
			UR_OPF_ONLY,                                           \
		.hdr_len = B + UR_ATMETH_LEN,                                  \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_ATMETH] = B},            \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x14] = {                                                      \
		.name = #T "_FETCH_ADD",                                       \
		.mask = XM | UR_HDR_ATMETH | UR_OPF_REQ | UR_OPF_ATOMIC |      \
			UR_OPF_ONLY,                                           \
		.hdr_len = B + UR_ATMETH_LEN,                                  \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_ATMETH] = B},            \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x16] = {                                                      \
		.name = #T "_SEND_LAST_INV",                                   \
		.mask = XM | UR_HDR_IETH | UR_HDR_PAYLOAD | UR_OPF_REQ |       \
			UR_OPF_SEND | UR_OPF_LAST | UR_OPF_INV,                \
		.hdr_len = B + UR_IETH_LEN,                                    \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_IETH] = B},              \
		.valid = true,                                                 \
	},                                                                     \
	[base + 0x17] = {                                                      \
		.name = #T "_SEND_ONLY_INV",                                   \
		.mask = XM | UR_HDR_IETH | UR_HDR_PAYLOAD | UR_OPF_REQ |       \
			UR_OPF_SEND | UR_OPF_ONLY | UR_OPF_INV,                \
		.hdr_len = B + UR_IETH_LEN,                                    \
		.off = {[UR_ETH_XRCETH] = XO, [UR_ETH_IETH] = B},              \
		.valid = true,                                                 \
	}

static const struct ur_opcode_info opcode_table[256] = {
	/* Reliable Connection (IBTA table 38, 0x00-0x1f). */
	SEND_ROWS(RC, 0x00, BTH, 0, 0),
	RC_ROWS(RC, 0x00, BTH, 0, 0),
	/* IBTA 1.5 memory placement extensions. */
	[UR_OP_RC_FLUSH] = {
		.name = "RC_FLUSH",
		.mask = UR_HDR_FETH | UR_HDR_RETH | UR_OPF_REQ | UR_OPF_FLUSH |
			UR_OPF_ONLY,
		.hdr_len = BTH + UR_FETH_LEN + UR_RETH_LEN,
		.off = {[UR_ETH_FETH] = BTH,
			[UR_ETH_RETH] = BTH + UR_FETH_LEN},
		.valid = true,
	},
	[UR_OP_RC_ATOMIC_WRITE] = {
		.name = "RC_ATOMIC_WRITE",
		.mask = UR_HDR_RETH | UR_HDR_PAYLOAD | UR_OPF_REQ |
			UR_OPF_ATOMIC_WRITE | UR_OPF_ONLY,
		.hdr_len = BTH + UR_RETH_LEN,
		.off = {[UR_ETH_RETH] = BTH},
		.fixed_payload = 8,
		.valid = true,
	},

	/* Unreliable Connection (0x20-0x3f): sends and writes only. */
	SEND_ROWS(UC, 0x20, BTH, 0, 0),

	/* Unreliable Datagram (0x60-0x7f). */
	[UR_OP_UD_SEND_ONLY] = {
		.name = "UD_SEND_ONLY",
		.mask = UR_HDR_DETH | UR_HDR_PAYLOAD | UR_OPF_REQ |
			UR_OPF_SEND | UR_OPF_ONLY,
		.hdr_len = BTH + UR_DETH_LEN,
		.off = {[UR_ETH_DETH] = BTH},
		.valid = true,
	},
	[UR_OP_UD_SEND_ONLY_IMM] = {
		.name = "UD_SEND_ONLY_IMM",
		.mask = UR_HDR_DETH | UR_HDR_IMMDT | UR_HDR_PAYLOAD |
			UR_OPF_REQ | UR_OPF_SEND | UR_OPF_ONLY | UR_OPF_IMM,
		.hdr_len = BTH + UR_DETH_LEN + UR_IMMDT_LEN,
		.off = {[UR_ETH_DETH] = BTH,
			[UR_ETH_IMMDT] = BTH + UR_DETH_LEN},
		.valid = true,
	},

	/*
	 * Extended Reliable Connection (0xa0-0xbf; IBTA 9.2, table 38, and
	 * the XRC annex): RC's opcodes, an XRCETH after the BTH of every
	 * request.
	 */
	SEND_ROWS(XRC, 0xa0, BTH + UR_XRCETH_LEN, UR_HDR_XRCETH, BTH),
	RC_ROWS(XRC, 0xa0, BTH + UR_XRCETH_LEN, UR_HDR_XRCETH, BTH),

	/*
	 * RoCEv2 Congestion Notification Packet (Annex A17.9): BTH with BECN
	 * set, then 16 reserved bytes, then the ICRC.
	 */
	[UR_OP_CNP] = {
		.name = "CNP",
		.mask = UR_HDR_PAYLOAD | UR_OPF_CNP,
		.hdr_len = BTH,
		.fixed_payload = UR_CNP_PAYLOAD_LEN,
		.valid = true,
	},
};

const struct ur_opcode_info *ur_opcode_info(uint8_t opcode)
{
	const struct ur_opcode_info *i = &opcode_table[opcode];

	return i->valid ? i : NULL;
}

const char *ur_opcode_name(uint8_t opcode)
{
	const struct ur_opcode_info *i = ur_opcode_info(opcode);

	return i ? i->name : "UNKNOWN";
}

size_t ur_pkt_hdr_len(uint8_t opcode)
{
	const struct ur_opcode_info *i = ur_opcode_info(opcode);

	return i ? i->hdr_len : 0;
}
