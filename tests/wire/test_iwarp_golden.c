// SPDX-License-Identifier: MIT
/*
 * Golden test for the iWARP wire layer: every capture of real Linux siw
 * traffic in shared/wire/siw is reassembled here (Ethernet, IPv4, TCP by
 * sequence number, retransmits checked against what was already seen),
 * each direction's stream goes through ur_mpa_rr_decode() and the
 * incremental deframer, fed at the captured segment boundaries and again
 * in random pieces, and:
 *   - every FPDU decodes, and every line of the README's listings (MPA
 *     Request/Reply, one line per FPDU) matches what we print from our
 *     decode, in stream order per connection and direction;
 *   - CRC32c verifies on every FPDU where C was negotiated;
 *   - re-encoding each FPDU (DDP/RDMAP header, Terminate body, framing)
 *     gives the captured bytes;
 *   - the negotiation functions give the Replies siw gave;
 *   - FPDU and CRC counts match the README's table.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ur_iwarp.h"
#include "ur_test.h"

#define MAX_CONN 8
#define MAX_SEGS 512
#define STREAM_MAX (1u << 18)
#define MAX_LINES 256

static const char *dir;

struct dirstream {
	uint32_t isn;
	bool have_isn;
	uint8_t *data;
	uint8_t *filled;
	uint32_t end;
	uint32_t seg_off[MAX_SEGS], seg_len[MAX_SEGS];
	int nseg;
	int retrans;
};

struct conn {
	uint8_t cip[4], sip[4];
	uint16_t cport, sport;
	struct dirstream d[2]; /* 0: client -> server, 1: server -> client */
};

struct file_result {
	int conns, rr, fpdus, crc_ok, retrans, terms, dirty_pad, recut;
};

/* ---- README ------------------------------------------------------------ */
struct rline {
	int dir;       /* 0 c>s, 1 s>c */
	int port;
	char text[1024]; /* from "MPA" or "ULPDU" on */
};

struct fexpect {
	char file[64];
	int fpdus, crc_right;
	bool has_crc_count;
	struct rline lines[MAX_LINES];
	int nlines;
};

static struct fexpect fx[32];
static int nfx;

static void parse_readme(void)
{
	char line[2048];
	struct fexpect *cur = NULL;
	FILE *f = ur_test_fopen_in(dir, "README.md");

	while (fgets(line, sizeof(line), f)) {
		char name[64], d[4];
		int frame, port, n, c, consumed;

		line[strcspn(line, "\n")] = 0;
		/* The table: | `f.pcap` | bytes | frames | conns | FPDUs | ... */
		if (sscanf(line, "| `%63[^`]` | %*d | %*d | %*d | %d |", name,
			   &n) == 2) {
			ASSERT_LT(nfx, 32);
			snprintf(fx[nfx].file, sizeof(fx[nfx].file), "%s", name);
			fx[nfx++].fpdus = n;
			continue;
		}
		if (!strncmp(line, "### `", 5)) {
			cur = NULL;
			for (int i = 0; i < nfx; i++)
				if (!strncmp(line + 5, fx[i].file,
					     strlen(fx[i].file)))
					cur = &fx[i];
			continue;
		}
		if (!strncmp(line, "## ", 3))
			cur = NULL;
		if (!cur)
			continue;
		if (sscanf(line, "- %*d TCP connection(s), %*d MPA "
				 "Request/Reply, %*d FPDUs, %d CRC32c right",
			   &c) == 1) {
			cur->crc_right = c;
			cur->has_crc_count = true;
		}
		if (sscanf(line, " %d %3s %d %n", &frame, d, &port,
			   &consumed) == 3 &&
		    (!strcmp(d, "c>s") || !strcmp(d, "s>c")) &&
		    (!strncmp(line + consumed, "MPA ", 4) ||
		     !strncmp(line + consumed, "ULPDU", 5))) {
			struct rline *r = &cur->lines[cur->nlines++];

			ASSERT_LT(cur->nlines, MAX_LINES);
			r->dir = d[0] == 's';
			r->port = port;
			snprintf(r->text, sizeof(r->text), "%s", line + consumed);
		}
	}
	fclose(f);
}

/* ---- formatting like the README's listings -------------------------------- */
static void fmt_rr(char *o, size_t n, const struct ur_mpa_rr *rr)
{
	char fl[64] = "";
	int k;

	if (rr->flags & UR_MPA_F_MARKERS)
		strcat(fl, "M,");
	if (rr->flags & UR_MPA_F_CRC)
		strcat(fl, "C,");
	if (rr->flags & UR_MPA_F_REJECT)
		strcat(fl, "R,");
	if (rr->flags & UR_MPA_F_ENHANCED)
		strcat(fl, "Enhanced,");
	if (*fl)
		fl[strlen(fl) - 1] = 0;
	k = snprintf(o, n, "MPA %s rev %u flags 0x%02x [%s] pd_len %u",
		     rr->reply ? "Reply" : "Request", rr->rev, rr->flags, fl,
		     rr->pd_len + (rr->v2 ? UR_MPA_V2_LEN : 0));
	if (rr->v2) {
		k += snprintf(o + k, n - (size_t)k, " | IRD %u ORD %u", rr->ird,
			      rr->ord);
		if (rr->p2p) {
			k += snprintf(o + k, n - (size_t)k, " P2P");
			if (rr->rtr_send)
				k += snprintf(o + k, n - (size_t)k,
					      "+zero-length-SEND-RTR");
			if (rr->rtr_write)
				k += snprintf(o + k, n - (size_t)k,
					      "+zero-length-WRITE-RTR");
			if (rr->rtr_read)
				k += snprintf(o + k, n - (size_t)k,
					      "+zero-length-READ-RTR");
		}
	}
	if (rr->pd_len)
		snprintf(o + k, n - (size_t)k, " | private data b'%.*s'",
			 rr->pd_len, (const char *)rr->pd);
}

/* The README's Terminate names: "catastrophic" for "local catastrophic". */
static const char *etype_short(uint8_t layer, uint8_t etype)
{
	const char *s = ur_iw_term_etype_name(layer, etype);

	return !strncmp(s, "local ", 6) ? s + 6 : s;
}

static int fmt_term(char *o, size_t n, const struct ur_iw_term *t)
{
	return snprintf(o, n, "layer %s etype %s code 0x%02x M%d D%d R%d",
			ur_iw_term_layer_name(t->layer),
			etype_short(t->layer, t->etype), t->ecode, t->m, t->d,
			t->r);
}

static void fmt_seg(char *o, size_t n, const struct ur_ddp_seg *s,
		    const struct ur_mpa_fpdu *fp)
{
	int k = snprintf(o, n, "ULPDU %4u %-9s %c%c ", fp->ulpdu_len,
			 s->op->name, s->tagged ? 'T' : 'U',
			 s->last ? 'L' : '-');

	if (s->tagged)
		k += snprintf(o + k, n - (size_t)k, "STag 0x%08x TO 0x%llx",
			      s->stag, (unsigned long long)s->to);
	else
		k += snprintf(o + k, n - (size_t)k, "QN %u MSN %u MO %u", s->qn,
			      s->msn, s->mo);
	if (s->opcode == UR_RDMAP_READ_REQ) {
		k += snprintf(o + k, n - (size_t)k,
			      " | sink STag 0x%08x TO 0x%llx size %u src STag "
			      "0x%08x TO 0x%llx",
			      s->rreq.sink_stag,
			      (unsigned long long)s->rreq.sink_to, s->rreq.size,
			      s->rreq.src_stag,
			      (unsigned long long)s->rreq.src_to);
	} else if (s->opcode == UR_RDMAP_TERMINATE) {
		struct ur_iw_term rfc, siw;

		ASSERT_EQ(ur_iw_term_decode(s->body, s->body_len, UR_TERM_RFC,
					    &rfc), UR_IW_OK);
		ASSERT_EQ(ur_iw_term_decode(s->body, s->body_len, UR_TERM_SIW,
					    &siw), UR_IW_OK);
		k += snprintf(o + k, n - (size_t)k, " | term ctrl %08x | as RFC "
			      "5040: ", ur_get32(s->body));
		k += fmt_term(o + k, n - (size_t)k, &rfc);
		k += snprintf(o + k, n - (size_t)k,
			      " | as siw (LE bitfields): ");
		k += fmt_term(o + k, n - (size_t)k, &siw);
		k += snprintf(o + k, n - (size_t)k,
			      " | +%u bytes of the offending header: ",
			      s->body_len - 4);
		for (uint32_t i = 4; i < s->body_len; i++)
			k += snprintf(o + k, n - (size_t)k, "%02x", s->body[i]);
	} else {
		k += snprintf(o + k, n - (size_t)k, " payload %u",
			      s->payload_len);
	}
	snprintf(o + k, n - (size_t)k, " | crc %s",
		 fp->crc_checked ? "ok" : fp->crc ? "?" : "0");
}

/* ---- TCP reassembly -------------------------------------------------------- */
static struct conn conns[MAX_CONN];
static int nconns;

static struct conn *find_conn(const uint8_t *src, uint16_t sp,
			      const uint8_t *dst, uint16_t dp, int *d,
			      bool syn_only)
{
	for (int i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		if (!memcmp(c->cip, src, 4) && c->cport == sp &&
		    !memcmp(c->sip, dst, 4) && c->sport == dp) {
			*d = 0;
			return c;
		}
		if (!memcmp(c->sip, src, 4) && c->sport == sp &&
		    !memcmp(c->cip, dst, 4) && c->cport == dp) {
			*d = 1;
			return c;
		}
	}
	if (!syn_only)
		return NULL;
	ASSERT_LT(nconns, MAX_CONN);
	struct conn *c = &conns[nconns++];

	memset(c, 0, sizeof(*c));
	memcpy(c->cip, src, 4);
	memcpy(c->sip, dst, 4);
	c->cport = sp;
	c->sport = dp;
	for (int k = 0; k < 2; k++) {
		c->d[k].data = calloc(1, STREAM_MAX);
		c->d[k].filled = calloc(1, STREAM_MAX);
		ASSERT(c->d[k].data && c->d[k].filled);
	}
	*d = 0;
	return c;
}

static void tcp_packet(const char *file, int frame, const uint8_t *p,
		       size_t len)
{
	const uint8_t *ip = p + 14, *tcp;
	size_t ihl, thl, iplen, dlen;
	uint32_t seq, off;
	uint8_t flags;
	struct dirstream *ds;
	struct conn *c;
	int d;

	ASSERT_GE(len, 14 + 20);
	ASSERT_EQ(ur_get16(p + 12), 0x0800);
	ASSERT_EQ(ip[0] >> 4, 4);
	ihl = (size_t)(ip[0] & 15) * 4;
	iplen = ur_get16(ip + 2);
	ASSERT_EQ(ip[9], 6);
	ASSERT_LE(14 + iplen, len);
	tcp = ip + ihl;
	thl = (size_t)(tcp[12] >> 4) * 4;
	ASSERT_LE(ihl + thl, iplen);
	dlen = iplen - ihl - thl;
	seq = ur_get32(tcp + 4);
	flags = tcp[13];
	c = find_conn(ip + 12, ur_get16(tcp), ip + 16, ur_get16(tcp + 2), &d,
		      (flags & 0x12) == 0x02);
	if (!c)
		UR_FAIL("%s frame %d: TCP segment of no connection", file, frame);
	ds = &c->d[d];
	if (flags & 0x02) { /* SYN: the data starts at ISN + 1 */
		ds->isn = seq;
		ds->have_isn = true;
		return;
	}
	if (!dlen)
		return;
	ASSERT(ds->have_isn);
	off = seq - ds->isn - 1;
	ASSERT_LE((uint64_t)off + dlen, STREAM_MAX);
	for (size_t i = 0; i < dlen; i++) {
		if (ds->filled[off + i] && ds->data[off + i] != tcp[thl + i])
			UR_FAIL("%s frame %d: retransmitted byte %u differs",
				file, frame, off + (uint32_t)i);
	}
	if (ds->filled[off] && ds->filled[off + dlen - 1]) {
		ds->retrans++;
		return;
	}
	memcpy(ds->data + off, tcp + thl, dlen);
	memset(ds->filled + off, 1, dlen);
	if (off + dlen > ds->end)
		ds->end = off + (uint32_t)dlen;
	ASSERT_LT(ds->nseg, MAX_SEGS);
	ds->seg_off[ds->nseg] = off;
	ds->seg_len[ds->nseg++] = (uint32_t)dlen;
}

/* ---- per stream ---------------------------------------------------------- */
static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

struct seen {
	struct fexpect *x;
	int port, dir, next; /* next README line of this port and direction */
};

static void expect_line(const char *file, struct seen *sn, const char *got)
{
	struct fexpect *x = sn->x;

	for (; sn->next < x->nlines; sn->next++) {
		struct rline *r = &x->lines[sn->next];

		if (r->port != sn->port || r->dir != sn->dir)
			continue;
		if (strcmp(r->text, got))
			UR_FAIL("%s port %d %s: README \"%s\"\n  we decode \"%s\"",
				file, sn->port, sn->dir ? "s>c" : "c>s", r->text,
				got);
		sn->next++;
		return;
	}
	UR_FAIL("%s port %d: \"%s\" is not in the README", file, sn->port, got);
}

static void no_more_lines(const char *file, struct seen *sn)
{
	for (; sn->next < sn->x->nlines; sn->next++) {
		struct rline *r = &sn->x->lines[sn->next];

		if (r->port == sn->port && r->dir == sn->dir)
			UR_FAIL("%s: README line \"%s\" not seen", file, r->text);
	}
}

/* Re-encode one decoded FPDU and compare with the stream bytes. */
static void reencode(const char *file, const struct ur_ddp_seg *s,
		     const struct ur_mpa_fpdu *fp, bool crc,
		     const uint8_t *stream, int *dirty_pad)
{
	static uint8_t hdr[128], out[UR_MPA_FPDU_MAX], body[256];
	struct ur_mpa_tx tx;
	const uint8_t *pl = s->payload;
	size_t pl_len = s->payload_len;
	int hl, n;

	hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), s);
	ASSERT_GT(hl, 0);
	if (s->opcode == UR_RDMAP_TERMINATE) {
		struct ur_iw_term t;

		ASSERT_EQ(ur_iw_term_decode(s->body, s->body_len, UR_TERM_SIW,
					    &t), UR_IW_OK);
		n = ur_iw_term_encode(body, sizeof(body), UR_TERM_SIW, &t);
		ASSERT_EQ(n, (int)s->body_len);
		pl = body;
		pl_len = (size_t)n;
	}
	ur_mpa_tx_init(&tx, crc, false);
	tx.pos = fp->stream_off;
	n = ur_mpa_tx_frame(&tx, out, sizeof(out), hdr, (size_t)hl, pl, pl_len);
	ASSERT_EQ(n, UR_MPA_LEN_LEN + fp->ulpdu_len + fp->pad + UR_MPA_CRC_LEN);
	/* siw does not clear the pad (RFC 5044 wants zeros): compare it
	 * apart. No padded FPDU travels with CRC in these captures; if one
	 * did, the CRC would cover siw's pad bytes and differ too. */
	for (int i = 0; i < fp->pad; i++) {
		size_t at = UR_MPA_LEN_LEN + fp->ulpdu_len + (size_t)i;

		ASSERT_EQ(out[at], 0);
		if (stream[fp->stream_off + at]) {
			(*dirty_pad)++;
			ASSERT(!crc);
			break;
		}
	}
	for (int i = 0; i < n; i++)
		if ((i < UR_MPA_LEN_LEN + fp->ulpdu_len ||
		     i >= UR_MPA_LEN_LEN + fp->ulpdu_len + fp->pad) &&
		    out[i] != stream[fp->stream_off + (size_t)i])
			UR_FAIL("%s: FPDU at stream offset %llu: re-encoded byte "
				"%d 0x%02x vs captured 0x%02x", file,
				(unsigned long long)fp->stream_off, i, out[i],
				stream[fp->stream_off + (size_t)i]);
}

/* The terminated segment's header travels back in the Terminate. */
struct last_seg {
	uint8_t hdr[UR_DDP_UNTAGGED_LEN + UR_RDMAP_RREQ_LEN];
	size_t len;
	uint32_t payload_len;
	uint32_t read_size;
};

static void check_terminate(const char *file, const struct ur_ddp_seg *s,
			    const struct last_seg *peer)
{
	struct ur_iw_term t;

	ASSERT_EQ(ur_iw_term_decode(s->body, s->body_len, UR_TERM_SIW, &t),
		  UR_IW_OK);
	ASSERT_EQ(t.extra_len, 0);
	ASSERT(t.m && t.d);
	ASSERT(peer->len);
	if (strstr(file, "write")) {
		/* README 9: DDP layer, tagged buffer error, invalid STag; the
		 * segment length is the WRITE's payload. */
		ASSERT_EQ(t.layer, UR_TERM_LAYER_DDP);
		ASSERT_EQ(t.etype, 1);
		ASSERT_EQ(t.ecode, 0x00);
		ASSERT(!t.r);
		ASSERT_EQ(t.seg_len, peer->payload_len);
		ASSERT_EQ(t.ddp_hdr_len, UR_DDP_TAGGED_LEN);
		ASSERT_MEM_EQ(t.ddp_hdr, peer->hdr, UR_DDP_TAGGED_LEN);
	} else {
		/* RDMAP layer, remote protection, invalid STag; siw rebuilds
		 * the Request with the read size where the MSN was. */
		ASSERT_EQ(t.layer, UR_TERM_LAYER_RDMAP);
		ASSERT_EQ(t.etype, 1);
		ASSERT_EQ(t.ecode, 0x00);
		ASSERT(t.r);
		ASSERT_EQ(t.seg_len, 0);
		ASSERT_EQ(t.ddp_hdr_len, UR_DDP_UNTAGGED_LEN);
		ASSERT_MEM_EQ(t.ddp_hdr, peer->hdr, 10);
		ASSERT_EQ(ur_get32(t.ddp_hdr + 10), peer->read_size);
		ASSERT_MEM_EQ(t.ddp_hdr + 14, peer->hdr + 14, 4);
		ASSERT_MEM_EQ(t.rdma_hdr, peer->hdr + UR_DDP_UNTAGGED_LEN,
			      UR_RDMAP_RREQ_LEN);
	}
	ASSERT_STR_EQ(ur_iw_term_ecode_name(t.layer, t.etype, t.ecode),
		      "invalid STag");
}

/*
 * A message of several segments, gathered as it arrives; when its last
 * segment is in, ur_ddp_cut at the MULPDU of siw's MSS (1448, README 5)
 * and ur_mpa_tx_frame must give the captured FPDUs byte for byte.
 */
struct msg {
	bool active;
	struct ur_ddp_seg first;
	uint64_t start;
	uint32_t len, nseg, seg_len;
	uint8_t data[1 << 16];
};

static void msg_add(const char *file, struct msg *m, const struct ur_ddp_seg *s,
		    const struct ur_mpa_fpdu *fp, bool crc, const uint8_t *stream,
		    int *recut)
{
	static uint8_t out[1 << 17], hdr[64];
	uint32_t mul = ur_mpa_mulpdu(1448, false), n, off, len;
	struct ur_mpa_tx tx;
	size_t at = 0;

	if (!s->op->payload)
		return;
	if (m->active &&
	    (s->opcode != m->first.opcode ||
	     (s->tagged ? s->stag != m->first.stag ||
				  s->to != m->first.to + m->len
			: s->msn != m->first.msn || s->mo != m->len)))
		m->active = false; /* another message came between */
	if (!m->active) {
		if (s->tagged ? false : s->mo)
			return; /* joined in the middle */
		m->active = true;
		m->first = *s;
		m->start = fp->stream_off;
		m->len = m->nseg = 0;
	}
	ASSERT_LE(m->len + s->payload_len, sizeof(m->data));
	memcpy(m->data + m->len, s->payload, s->payload_len);
	m->len += s->payload_len;
	m->nseg++;
	if (!s->last)
		return;
	m->active = false;
	if (m->nseg < 2)
		return;
	ur_mpa_tx_init(&tx, crc, false);
	tx.pos = m->start;
	for (uint32_t i = 0; i < m->nseg; i++) {
		struct ur_ddp_seg seg;
		int hl, w;

		n = ur_ddp_cut(&m->first, m->len, mul, i, &seg, &off, &len);
		ASSERT_EQ(n, m->nseg);

		hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), &seg);
		w = ur_mpa_tx_frame(&tx, out + at, sizeof(out) - at, hdr,
				    (size_t)hl, m->data + off, len);
		ASSERT_GT(w, 0);
		at += (size_t)w;
	}
	for (size_t i = 0; i < at; i++)
		if (out[i] != stream[m->start + i])
			UR_FAIL("%s: %u-byte %s cut at MULPDU %u: byte %zu of "
				"%zu differs", file, m->len, m->first.op->name, mul,
				i, at);
	(*recut)++;
}

static void check_conn(const char *file, struct fexpect *x, struct conn *c,
		       struct file_result *res)
{
	struct ur_mpa_rr rr[2];
	size_t rr_len[2] = {0, 0};
	bool crc = false, got_rr[2] = {false, false};
	struct last_seg last[2];
	static struct ur_mpa_rx rx, rx2;

	memset(last, 0, sizeof(last));
	res->conns++;
	for (int d = 0; d < 2; d++) {
		struct dirstream *ds = &c->d[d];
		struct seen sn = {x, c->cport, d, 0};
		char line[1024];

		for (uint32_t i = 0; i < ds->end; i++)
			if (!ds->filled[i])
				UR_FAIL("%s port %u: hole at stream byte %u", file,
					c->cport, i);
		res->retrans += ds->retrans;
		if (!ds->end) {
			no_more_lines(file, &sn);
			continue;
		}
		ASSERT_EQ(ur_mpa_rr_decode(ds->data, ds->end, &rr[d], &rr_len[d]),
			  UR_IW_OK);
		ASSERT_EQ(rr[d].reply, d == 1);
		got_rr[d] = true;
		res->rr++;
		fmt_rr(line, sizeof(line), &rr[d]);
		expect_line(file, &sn, line);
		/* Re-encode the Request/Reply. */
		{
			uint8_t b[UR_MPA_RR_LEN + UR_MPA_PD_MAX];

			ASSERT_EQ(ur_mpa_rr_encode(b, sizeof(b), &rr[d]),
				  (int)rr_len[d]);
			ASSERT_MEM_EQ(b, ds->data, rr_len[d]);
		}
		if (d == 1)
			crc = (rr[0].flags | rr[1].flags) & UR_MPA_F_CRC;
		if (d == 0 && c->d[1].end) {
			struct ur_mpa_rr tmp;
			size_t u;

			/* CRC is known once both frames are: peek the Reply. */
			ASSERT_EQ(ur_mpa_rr_decode(c->d[1].data, c->d[1].end,
						   &tmp, &u), UR_IW_OK);
			crc = (rr[0].flags | tmp.flags) & UR_MPA_F_CRC;
		}
		if (rr[d].flags & UR_MPA_F_REJECT)
			ASSERT_EQ(ds->end, rr_len[d]);

		/* Feed at the captured segment boundaries, in stream order
		 * (a segment that arrived early waits for the gap). */
		for (int i = 1; i < ds->nseg; i++)
			for (int j = i; j > 0 && ds->seg_off[j - 1] > ds->seg_off[j];
			     j--) {
				uint32_t o = ds->seg_off[j], l = ds->seg_len[j];

				ds->seg_off[j] = ds->seg_off[j - 1];
				ds->seg_len[j] = ds->seg_len[j - 1];
				ds->seg_off[j - 1] = o;
				ds->seg_len[j - 1] = l;
			}
		const uint8_t *st = ds->data + rr_len[d];
		size_t st_len = ds->end - rr_len[d];
		int fpdus = 0;
		static struct msg msg;

		msg.active = false;

		ur_mpa_rx_init(&rx, crc, false);
		for (int sgi = 0; sgi < ds->nseg; sgi++) {
			uint32_t o = ds->seg_off[sgi], l = ds->seg_len[sgi];

			if (o + l <= rr_len[d])
				continue;
			if (o < rr_len[d]) {
				l -= (uint32_t)rr_len[d] - o;
				o = (uint32_t)rr_len[d];
			}
			const uint8_t *p = ds->data + o;

			while (l) {
				struct ur_mpa_fpdu fp;
				struct ur_ddp_seg s;
				size_t used;
				enum ur_iw_err e = ur_mpa_rx_feed(&rx, p, l, &used,
								  &fp);

				p += used;
				l -= (uint32_t)used;
				if (e == UR_IW_MORE)
					break;
				if (e != UR_IW_OK)
					UR_FAIL("%s port %u %s: deframer: %s", file,
						c->cport, d ? "s>c" : "c>s",
						ur_iw_strerror(e));
				fpdus++;
				ASSERT_EQ(fp.crc_checked, crc);
				e = ur_ddp_decode(fp.ulpdu, fp.ulpdu_len, &s);
				if (e != UR_IW_OK)
					UR_FAIL("%s: FPDU %d: %s", file, fpdus,
						ur_iw_strerror(e));
				fmt_seg(line, sizeof(line), &s, &fp);
				expect_line(file, &sn, line);
				reencode(file, &s, &fp, crc, st,
					 &res->dirty_pad);
				if (s.opcode == UR_RDMAP_TERMINATE) {
					check_terminate(file, &s, &last[!d]);
					res->terms++;
				} else {
					size_t hl = fp.ulpdu_len < sizeof(last[d].hdr)
							    ? fp.ulpdu_len
							    : sizeof(last[d].hdr);

					memcpy(last[d].hdr, fp.ulpdu, hl);
					last[d].len = hl;
					last[d].payload_len = s.payload_len;
					last[d].read_size = s.rreq.size;
					msg_add(file, &msg, &s, &fp, crc, st,
						&res->recut);
				}
			}
		}
		ASSERT_EQ(rx.have, 0); /* the stream ends on an FPDU boundary */
		ASSERT_EQ(rx.fpdus, (uint64_t)fpdus);
		ASSERT_EQ(rx.crc_ok, crc ? (uint64_t)fpdus : 0);
		res->fpdus += fpdus;
		res->crc_ok += (int)rx.crc_ok;
		no_more_lines(file, &sn);

		/* Again in random pieces: the same FPDUs. */
		ur_mpa_rx_init(&rx2, crc, false);
		for (size_t at = 0; at < st_len;) {
			size_t l = 1 + rnd(rnd(4) ? 7 : 3000), used;
			struct ur_mpa_fpdu fp;
			enum ur_iw_err e;

			if (l > st_len - at)
				l = st_len - at;
			e = ur_mpa_rx_feed(&rx2, st + at, l, &used, &fp);
			ASSERT(e == UR_IW_OK || e == UR_IW_MORE);
			at += used;
		}
		ASSERT_EQ(rx2.fpdus, rx.fpdus);
		ASSERT_EQ(rx2.pos, rx.pos);
	}
	if (!got_rr[0] || !got_rr[1])
		return;

	/* Negotiation: what stock siw (the server) answers to this Request,
	 * accepting with what its Reply shows, and what the client makes of
	 * the Reply. crc_ and p2p_ clients run a changed siw (README). */
	struct ur_mpa_policy srv = {.relaxed_ird = true, .ird_max = 128,
				    .ord_max = 128, .ird = rr[1].ird,
				    .ord = rr[1].ord};
	struct ur_mpa_policy cli = srv;
	struct ur_mpa_rr rep;
	struct ur_mpa_conn cs, cc;
	int r = ur_mpa_answer(&rr[0], &srv, &rep, &cs);

	ASSERT_EQ(r, 0);
	cli.ird = rr[0].ird;
	cli.ord = rr[0].ord;
	cli.crc_required = strstr(file, "crc_") != NULL;
	if (rr[1].flags & UR_MPA_F_REJECT) {
		/* The application rejected: same frame but R (README 10). */
		ASSERT_EQ(rr[1].flags, rep.flags | UR_MPA_F_REJECT);
		ASSERT_EQ(ur_mpa_check_reply(&rr[0], &rr[1], &cli, &cc),
			  -ECONNREFUSED);
		return;
	}
	rep.pd = rr[1].pd;
	rep.pd_len = rr[1].pd_len;
	{
		uint8_t a[UR_MPA_RR_LEN + UR_MPA_PD_MAX];
		int n = ur_mpa_rr_encode(a, sizeof(a), &rep);

		ASSERT_EQ(n, (int)rr_len[1]);
		ASSERT_MEM_EQ(a, c->d[1].data, rr_len[1]);
	}
	ASSERT_EQ(cs.crc, crc);
	ASSERT_EQ(ur_mpa_check_reply(&rr[0], &rr[1], &cli, &cc), 0);
	ASSERT_EQ(cc.crc, crc);
	ASSERT_EQ(cc.ird, cs.ord);
	ASSERT_EQ(cc.ord, cs.ird);
	ASSERT_EQ(cc.rtr, strstr(file, "p2p_") ? UR_RTR_WRITE : UR_RTR_NONE);
	ASSERT_EQ(cs.rtr, cc.rtr);
}

static struct file_result check_pcap(struct fexpect *x, const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	struct file_result res = {0};
	struct pcap_pkthdr *ph;
	const u_char *data;
	pcap_t *pc;
	int frame = 0, r;

	pc = pcap_open_offline(path, err);
	if (!pc)
		UR_FAIL("%s: %s", path, err);
	ASSERT_EQ(pcap_datalink(pc), DLT_EN10MB);
	nconns = 0;
	while ((r = pcap_next_ex(pc, &ph, &data)) == 1) {
		ASSERT_EQ(ph->caplen, ph->len);
		tcp_packet(x->file, ++frame, data, ph->caplen);
	}
	ASSERT_EQ(r, PCAP_ERROR_BREAK);
	pcap_close(pc);
	for (int i = 0; i < nconns; i++) {
		check_conn(x->file, x, &conns[i], &res);
		for (int k = 0; k < 2; k++) {
			free(conns[i].d[k].data);
			free(conns[i].d[k].filled);
		}
	}
	return res;
}

static void check_file(struct fexpect *x)
{
	char path[512];
	struct file_result res;

	snprintf(path, sizeof(path), "%s/%s", dir, x->file);
	res = check_pcap(x, path);
	if (res.fpdus != x->fpdus)
		UR_FAIL("%s: %d FPDUs, README says %d", x->file, res.fpdus,
			x->fpdus);
	if (x->has_crc_count)
		ASSERT_EQ(res.crc_ok, x->crc_right);
	else
		ASSERT_EQ(res.crc_ok, 0);
	if (strstr(x->file, "terminate_"))
		ASSERT_EQ(res.terms, 1);
	printf("[%s: %d conns, %d MPA Req/Rep, %d FPDUs, %d CRC32c ok, "
	       "%d Terminate, %d retransmits, %d non-zero pads, %d messages re-cut] ",
	       x->file, res.conns, res.rr, res.fpdus, res.crc_ok, res.terms,
	       res.retrans, res.dirty_pad, res.recut);
	/* 5 messages of 3 segments in each perftest bandwidth capture. */
	if (strstr(x->file, "_bw"))
		ASSERT_EQ(res.recut, 5);
}

static void setup(void)
{
	int pcaps;

	if (nfx)
		return;
	rng = ur_test_seed | 1;
	dir = ur_test_golden_dir("../shared/wire/siw", &pcaps);
	parse_readme();
	ASSERT_GE(pcaps, 11);
	ASSERT_EQ(nfx, pcaps); /* every capture is in the table */
}

static void test_readme(void)
{
	int lines = 0;

	setup();
	for (int i = 0; i < nfx; i++)
		lines += fx[i].nlines;
	ASSERT_GE(lines, 250);
}

static void test_all_captures(void)
{
	setup();
	for (int i = 0; i < nfx; i++)
		check_file(&fx[i]);
}

/*
 * The captures hold no retransmission and no reordering: make some. A
 * copy of rping_verify.pcap with a data segment sent twice (once again
 * later) and two segments swapped must give the same decode, and a
 * retransmission that differs from the first copy must be caught.
 */
static void rewrite(const char *in, const char *out, int dup, int swap,
		    bool corrupt)
{
	char err[PCAP_ERRBUF_SIZE];
	static u_char frames[64][2048];
	static struct pcap_pkthdr hdrs[64];
	struct pcap_pkthdr *ph;
	const u_char *data;
	pcap_t *pc = pcap_open_offline(in, err);
	pcap_dumper_t *w;
	int n = 0;

	ASSERT(pc);
	while (pcap_next_ex(pc, &ph, &data) == 1) {
		ASSERT_LT(n, 64);
		ASSERT_LE(ph->caplen, sizeof(frames[0]));
		hdrs[n] = *ph;
		memcpy(frames[n++], data, ph->caplen);
	}
	w = pcap_dump_open(pc, out);
	ASSERT(w);
	for (int i = 0; i < n; i++) {
		int k = i == swap ? swap + 1 : i == swap + 1 ? swap : i;

		pcap_dump((u_char *)w, &hdrs[k], frames[k]);
		if (i == dup + 2) { /* frame dup again, two frames later */
			if (corrupt)
				frames[dup][hdrs[dup].caplen - 1] ^= 1;
			pcap_dump((u_char *)w, &hdrs[dup], frames[dup]);
		}
	}
	pcap_dump_close(w);
	pcap_close(pc);
}

static void test_retransmit_reorder(void)
{
	char in[512], out[512];
	struct fexpect *x = NULL;
	struct file_result res;
	pid_t pid;
	int st;

	setup();
	for (int i = 0; i < nfx; i++)
		if (!strcmp(fx[i].file, "rping_verify.pcap"))
			x = &fx[i];
	ASSERT(x);
	snprintf(in, sizeof(in), "%s/%s", dir, x->file);
	snprintf(out, sizeof(out), "/tmp/uroce_iwarp_rtx_%d.pcap", (int)getpid());
	/* Frames 10 (READ Response) again after 12; 13 and 14 swapped
	 * (both from the server: the SENDs' order changes on the wire). */
	rewrite(in, out, 9, 12, false);
	res = check_pcap(x, out);
	ASSERT_EQ(res.retrans, 1);
	ASSERT_EQ(res.fpdus, x->fpdus);
	printf("[%d FPDUs with 1 retransmit and 1 swap] ", res.fpdus);
	/* A retransmission with other bytes: the test's reassembly fails. */
	rewrite(in, out, 9, -5, true);
	fflush(stdout);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		check_pcap(x, out);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	unlink(out);
}

static const struct ur_test_case tests[] = {
	{"readme", test_readme},
	{"all_captures", test_all_captures},
	{"retransmit_reorder", test_retransmit_reorder},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)
