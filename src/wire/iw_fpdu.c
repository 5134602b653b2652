// SPDX-License-Identifier: MIT
/*
 * MPA FPDUs over a TCP byte stream (RFC 5044): an incremental deframer
 * that takes any segment boundaries and yields whole ULPDUs, and the framer
 * that builds FPDUs. FPDU = ULPDU Length (2) | ULPDU | pad to 4 | CRC32c (4),
 * with a 4-byte marker (16 reserved bits, 16-bit FPDUPTR) at every 512th
 * octet of the stream when markers are negotiated. Stream offset 0 is the
 * first octet after the MPA Request/Reply: markers count from there.
 */
#include <errno.h>
#include <string.h>

#include "ur_iwarp.h"

/* RFC 5044 (MULPDU): MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
 * with markers, EMSS - (6 + EMSS mod 4) without. */
uint32_t ur_mpa_mulpdu(uint32_t emss, bool markers)
{
	uint32_t over = 6 + emss % 4;

	if (markers)
		over += 4 * ((emss + UR_MPA_MARKER_INTERVAL - 1) /
			     UR_MPA_MARKER_INTERVAL);
	if (emss <= over)
		return 0;
	return emss - over > UR_MPA_ULPDU_MAX ? UR_MPA_ULPDU_MAX : emss - over;
}

void ur_mpa_rx_init(struct ur_mpa_rx *rx, bool crc, bool markers)
{
	memset(rx, 0, offsetof(struct ur_mpa_rx, buf));
	rx->crc = crc;
	rx->markers = markers;
	rx->ulpdu_max = UR_MPA_ULPDU_MAX;
	rx->need = UR_MPA_LEN_LEN;
}

static enum ur_iw_err rx_fail(struct ur_mpa_rx *rx, enum ur_iw_err e)
{
	rx->err = e;
	rx->errors[e]++;
	return e;
}

/* Length of the part the CRC covers (markers aside): length, ULPDU, pad. */
static uint32_t covered(const struct ur_mpa_rx *rx)
{
	return rx->need - UR_MPA_CRC_LEN;
}

/*
 * A whole marker: reserved bits zero and FPDUPTR the distance back to the
 * current FPDU's ULPDU Length field, or 0 for a marker right before one
 * (RFC 5044 5).
 */
static enum ur_iw_err rx_marker(struct ur_mpa_rx *rx)
{
	uint64_t at = rx->pos - UR_MPA_MARKER_LEN;
	uint64_t want = rx->have ? at - rx->fpdu_start : 0;

	rx->markers_seen++;
	if (ur_get16(rx->mk) != 0 || ur_get16(rx->mk + 2) != want)
		return rx_fail(rx, UR_IW_BAD_MARKER);
	return UR_IW_OK;
}

enum ur_iw_err ur_mpa_rx_feed(struct ur_mpa_rx *rx, const uint8_t *p, size_t n,
			      size_t *used, struct ur_mpa_fpdu *fp)
{
	size_t done = 0;

	*used = 0;
	if (rx->err)
		return rx->err;
	while (done < n) {
		size_t k;

		if (rx->markers && !rx->in_marker &&
		    rx->pos % UR_MPA_MARKER_INTERVAL == 0) {
			rx->in_marker = true;
			rx->mk_have = 0;
			if (!rx->have)
				rx->reg = 0; /* the FPDU (and its CRC) opens here */
		}
		if (rx->in_marker) {
			k = UR_MPA_MARKER_LEN - rx->mk_have;
			if (k > n - done)
				k = n - done;
			memcpy(rx->mk + rx->mk_have, p + done, k);
			/* Markers before the CRC field are covered by it. */
			if (rx->crc && (rx->have < UR_MPA_LEN_LEN ||
					rx->have <= covered(rx)))
				rx->reg = ur_crc32c(rx->reg, p + done, k);
			rx->mk_have = (uint8_t)(rx->mk_have + k);
			rx->pos += k;
			done += k;
			if (rx->mk_have < UR_MPA_MARKER_LEN)
				break;
			rx->in_marker = false;
			rx->fpdu_markers++;
			if (rx_marker(rx)) {
				*used = done;
				return rx->err;
			}
			continue;
		}
		if (!rx->have) {
			if (!rx->fpdu_markers)
				rx->reg = 0;
			rx->fpdu_start = rx->pos;
		}
		k = rx->need - rx->have;
		if (k > n - done)
			k = n - done;
		if (rx->markers) {
			size_t room = UR_MPA_MARKER_INTERVAL -
				      rx->pos % UR_MPA_MARKER_INTERVAL;

			if (k > room)
				k = room;
		}
		memcpy(rx->buf + rx->have, p + done, k);
		if (!rx->crc) {
			/* nothing to check: no CRC computed */
		} else if (rx->have >= UR_MPA_LEN_LEN) {
			uint32_t cov = covered(rx);

			if (rx->have < cov)
				rx->reg = ur_crc32c(rx->reg, p + done,
						    rx->have + k > cov ? cov - rx->have : k);
		} else {
			rx->reg = ur_crc32c(rx->reg, p + done, k);
		}
		rx->have += (uint32_t)k;
		rx->pos += k;
		done += k;
		if (rx->have == UR_MPA_LEN_LEN && rx->need == UR_MPA_LEN_LEN) {
			uint16_t ulen = ur_get16(rx->buf);

			if (ulen > rx->ulpdu_max) {
				*used = done;
				return rx_fail(rx, UR_IW_BAD_LEN);
			}
			rx->need = UR_MPA_LEN_LEN + ulen + ur_mpa_pad(ulen) +
				   UR_MPA_CRC_LEN;
			continue;
		}
		if (rx->have == rx->need && rx->need > UR_MPA_LEN_LEN) {
			uint32_t cov = covered(rx);
			const uint8_t *c = rx->buf + cov;

			memset(fp, 0, sizeof(*fp));
			fp->ulpdu = rx->buf + UR_MPA_LEN_LEN;
			fp->ulpdu_len = ur_get16(rx->buf);
			fp->pad = (uint8_t)ur_mpa_pad(fp->ulpdu_len);
			/* LSB first, as the iSCSI digest (RFC 3720). */
			fp->crc = c[0] | (c[1] << 8) | ((uint32_t)c[2] << 16) |
				  ((uint32_t)c[3] << 24);
			fp->markers = rx->fpdu_markers;
			fp->stream_off = rx->fpdu_start;
			*used = done;
			rx->have = 0;
			rx->need = UR_MPA_LEN_LEN;
			rx->fpdu_markers = 0;
			if (rx->crc) {
				if (fp->crc != rx->reg)
					return rx_fail(rx, UR_IW_BAD_CRC);
				fp->crc_checked = true;
				rx->crc_ok++;
			}
			rx->fpdus++;
			return UR_IW_OK;
		}
	}
	*used = done;
	return UR_IW_MORE;
}

void ur_mpa_tx_init(struct ur_mpa_tx *tx, bool crc, bool markers)
{
	tx->crc = crc;
	tx->markers = markers;
	tx->pos = 0;
}

static size_t markers_in(uint64_t pos, size_t len)
{
	/* Markers that open at stream offsets pos..; each one lengthens the
	 * run it sits in. */
	size_t m = 0, left = len;

	while (left) {
		size_t room;

		if (pos % UR_MPA_MARKER_INTERVAL == 0) {
			m++;
			pos += UR_MPA_MARKER_LEN;
		}
		room = UR_MPA_MARKER_INTERVAL - pos % UR_MPA_MARKER_INTERVAL;
		if (room > left)
			room = left;
		pos += room;
		left -= room;
	}
	return m;
}

size_t ur_mpa_tx_len(const struct ur_mpa_tx *tx, uint32_t ulpdu_len)
{
	size_t len = UR_MPA_LEN_LEN + ulpdu_len + ur_mpa_pad(ulpdu_len) +
		     UR_MPA_CRC_LEN;

	return len + (tx->markers ? UR_MPA_MARKER_LEN * markers_in(tx->pos, len)
				  : 0);
}

struct txw {
	struct ur_mpa_tx *tx;
	uint8_t *out;
	size_t at;
	uint64_t len_pos; /* stream offset of the FPDU's ULPDU Length */
	uint32_t reg;
	bool covered;     /* bytes still go into the CRC */
};

/* A marker if the stream is at one: FPDUPTR back to the length field, 0
 * before the FPDU has begun (RFC 5044 5). Covered by the CRC unless
 * it falls after the CRC has begun. */
static void tx_marker(struct txw *w, bool started)
{
	uint64_t pos = w->tx->pos;
	uint8_t *m = w->out + w->at;

	if (!w->tx->markers || pos % UR_MPA_MARKER_INTERVAL)
		return;
	ur_put16(m, 0);
	ur_put16(m + 2, (uint16_t)(started ? pos - w->len_pos : 0));
	if (w->covered)
		w->reg = ur_crc32c(w->reg, m, UR_MPA_MARKER_LEN);
	w->at += UR_MPA_MARKER_LEN;
	w->tx->pos += UR_MPA_MARKER_LEN;
}

static void tx_put(struct txw *w, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n;

		tx_marker(w, true);
		if (w->tx->markers) {
			size_t room = UR_MPA_MARKER_INTERVAL -
				      w->tx->pos % UR_MPA_MARKER_INTERVAL;

			if (k > room)
				k = room;
		}
		memcpy(w->out + w->at, p, k);
		if (w->covered)
			w->reg = ur_crc32c(w->reg, p, k);
		w->at += k;
		w->tx->pos += k;
		p += k;
		n -= k;
	}
}

int ur_mpa_tx_frame(struct ur_mpa_tx *tx, uint8_t *out, size_t cap,
		    const uint8_t *hdr, size_t hdr_len, const uint8_t *payload,
		    size_t payload_len)
{
	static const uint8_t zero[4];
	size_t ulen = hdr_len + payload_len;
	/* No CRC negotiated: none computed (the field goes out zero). */
	struct txw w = {tx, out, 0, 0, 0, tx->crc};
	uint32_t c;
	uint8_t b[4];

	if (ulen > UR_MPA_ULPDU_MAX)
		return -EINVAL;
	/* With markers, an FPDU's span must stay within the 16-bit FPDUPTR
	 * of its last marker (RFC 5044 5): a ULPDU near 64 KiB does not. */
	if (tx->markers && ur_mpa_tx_len(tx, (uint32_t)ulen) > 0xffff)
		return -EMSGSIZE;
	if (cap < ur_mpa_tx_len(tx, (uint32_t)ulen))
		return -ENOSPC;
	tx_marker(&w, false);
	w.len_pos = tx->pos;
	ur_put16(b, (uint16_t)ulen);
	tx_put(&w, b, UR_MPA_LEN_LEN);
	if (hdr_len)
		tx_put(&w, hdr, hdr_len);
	if (payload_len)
		tx_put(&w, payload, payload_len);
	tx_put(&w, zero, ur_mpa_pad((uint32_t)ulen));
	/* A marker due right before the CRC field is covered by it. */
	tx_marker(&w, true);
	w.covered = false;
	/* Without CRC the field is there and zero (siw; RFC 5044). */
	c = tx->crc ? w.reg : 0;
	b[0] = (uint8_t)c; /* LSB first (RFC 3720) */
	b[1] = (uint8_t)(c >> 8);
	b[2] = (uint8_t)(c >> 16);
	b[3] = (uint8_t)(c >> 24);
	tx_put(&w, b, UR_MPA_CRC_LEN);
	return (int)w.at;
}
