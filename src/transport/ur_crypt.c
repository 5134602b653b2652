// SPDX-License-Identifier: MIT
/*
 * Encryption and authentication of RC/UC packets (docs/wire.md
 * "Encryption", docs/security.md "Encryption"): AES-256-GCM or SM4-GCM
 * from libgcrypt, one key per direction of a connection, derived with
 * HKDF-SHA256 (RFC 5869) from the administrator's key, the sender's fresh
 * session id, the algorithm, the key's epoch and both ends' GIDs and QPNs.
 *
 * Nonces never repeat under a key: the IV is a 4-byte salt from the KDF
 * and the packet's 64-bit sequence number, which counts every packet the
 * QP seals (a retransmission or a READ response made again from memory is
 * sealed afresh with the next number); each session id is random and each
 * 2^24 numbers take a new key (the epoch). The receiver checks the tag
 * before anything of the packet is used, keeps a replay window of
 * sequence numbers (RFC 4303 3.4.3) and, once a packet of the peer's
 * session verified, takes no other session until the QP is reset.
 */
#include <stdlib.h>
#include <string.h>
#include <gcrypt.h>
#include <pthread.h>

#include "ur_qp_priv.h"

static const struct {
	const char *name;
	uint32_t key_len;
	int gcry_algo;
} alg_tab[] = {
	[UR_CRYPT_NONE] = { "none", 0, 0 },
	[UR_CRYPT_AES256GCM] = { "aes-256-gcm", 32, GCRY_CIPHER_AES256 },
	[UR_CRYPT_SM4GCM] = { "sm4-gcm", 16, GCRY_CIPHER_SM4 },
};
#define N_ALGS (sizeof(alg_tab) / sizeof(alg_tab[0]))

const char *ur_crypt_alg_name(unsigned int alg)
{
	return alg < N_ALGS ? alg_tab[alg].name : NULL;
}

int ur_crypt_alg_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	for (unsigned int i = 0; i < N_ALGS; i++)
		if (!strcmp(s, alg_tab[i].name))
			return (int)i;
	if (!strcmp(s, "aes"))
		return UR_CRYPT_AES256GCM;
	if (!strcmp(s, "sm4"))
		return UR_CRYPT_SM4GCM;
	return -EINVAL;
}

uint32_t ur_crypt_key_len(unsigned int alg)
{
	return alg < N_ALGS ? alg_tab[alg].key_len : 0;
}

/* libgcrypt wants its version checked before use; a program that set it
 * up itself keeps its settings. Secure memory stays off: the keys live in
 * the QP's ordinary memory anyway. */
static pthread_once_t gcry_once = PTHREAD_ONCE_INIT;
static bool gcry_ok;

static void gcry_setup(void)
{
	if (!gcry_check_version(GCRYPT_VERSION))
		return;
	if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
		gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
		gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	}
	gcry_ok = true;
}

static bool gcry_ready(void)
{
	pthread_once(&gcry_once, gcry_setup);
	return gcry_ok;
}

int ur_crypt_alg_check(unsigned int alg)
{
	if (!alg || alg >= N_ALGS || !gcry_ready() ||
	    gcry_cipher_test_algo(alg_tab[alg].gcry_algo))
		return -EOPNOTSUPP;
	return 0;
}

void ur_crypt_random(void *buf, size_t len)
{
	if (gcry_ready())
		gcry_create_nonce(buf, len);
}

/* One GCM pass on an open, keyed handle. */
static int gcm_run(gcry_cipher_hd_t hd, const uint8_t *iv, const uint8_t *aad,
		   size_t aad_len, const uint8_t *in, uint8_t *out, size_t len,
		   uint8_t *tag, bool seal)
{
	gcry_error_t e;

	if (gcry_cipher_setiv(hd, iv, UR_CRYPT_IV_LEN))
		return -EIO;
	if (aad_len && gcry_cipher_authenticate(hd, aad, aad_len))
		return -EIO;
	if (len) {
		if (seal)
			e = in == out ? gcry_cipher_encrypt(hd, out, len, NULL, 0)
				      : gcry_cipher_encrypt(hd, out, len, in, len);
		else
			e = in == out ? gcry_cipher_decrypt(hd, out, len, NULL, 0)
				      : gcry_cipher_decrypt(hd, out, len, in, len);
		if (e)
			return -EIO;
	}
	if (seal)
		return gcry_cipher_gettag(hd, tag, UR_CRYPT_TAG_LEN) ? -EIO : 0;
	e = gcry_cipher_checktag(hd, tag, UR_CRYPT_TAG_LEN);
	if (gcry_err_code(e) == GPG_ERR_CHECKSUM)
		return -EBADMSG;
	return e ? -EIO : 0;
}

static int key_open(gcry_cipher_hd_t *hd, unsigned int alg, const uint8_t *key)
{
	if (!alg || alg >= N_ALGS || !gcry_ready())
		return -EINVAL;
	if (!*hd && gcry_cipher_open(hd, alg_tab[alg].gcry_algo,
				     GCRY_CIPHER_MODE_GCM, 0))
		return -EIO;
	return gcry_cipher_setkey(*hd, key, alg_tab[alg].key_len) ? -EIO : 0;
}

int ur_crypt_aead(unsigned int alg, const uint8_t *key, const uint8_t *iv,
		  const uint8_t *aad, size_t aad_len, const uint8_t *in,
		  uint8_t *out, size_t len, uint8_t *tag, bool seal)
{
	gcry_cipher_hd_t hd = NULL;
	int rc = key_open(&hd, alg, key);

	if (!rc)
		rc = gcm_run(hd, iv, aad, aad_len, in, out, len, tag, seal);
	gcry_cipher_close(hd);
	return rc;
}

/* HMAC-SHA256 of the concatenation of up to three pieces. */
static int hmac(const uint8_t *key, size_t key_len, const uint8_t *a,
		size_t a_len, const uint8_t *b, size_t b_len, const uint8_t *c,
		size_t c_len, uint8_t out[32])
{
	gcry_md_hd_t md;

	if (gcry_md_open(&md, GCRY_MD_SHA256, GCRY_MD_FLAG_HMAC))
		return -EIO;
	if (gcry_md_setkey(md, key, key_len)) {
		gcry_md_close(md);
		return -EIO;
	}
	gcry_md_write(md, a, a_len);
	gcry_md_write(md, b, b_len);
	gcry_md_write(md, c, c_len);
	memcpy(out, gcry_md_read(md, GCRY_MD_SHA256), 32);
	gcry_md_close(md);
	return 0;
}

int ur_crypt_hmac(const uint8_t *key, size_t key_len, const uint8_t *msg,
		  size_t len, uint8_t out[32])
{
	if (!gcry_ready())
		return -EIO;
	return hmac(key, key_len, msg, len, NULL, 0, NULL, 0, out);
}

bool ur_crypt_memneq(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d != 0;
}

int ur_crypt_hkdf(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
		  size_t ikm_len, const uint8_t *info, size_t info_len,
		  uint8_t *out, size_t out_len)
{
	static const uint8_t zero[32];
	uint8_t prk[32], t[32];
	size_t done = 0, t_len = 0;
	int rc;

	if (out_len > 255 * 32 || !gcry_ready())
		return -EINVAL;
	/* 2.2: PRK = HMAC(salt, IKM); no salt = HashLen zeros. */
	rc = salt_len ? hmac(salt, salt_len, ikm, ikm_len, NULL, 0, NULL, 0, prk)
		      : hmac(zero, 32, ikm, ikm_len, NULL, 0, NULL, 0, prk);
	/* 2.3: T(i) = HMAC(PRK, T(i-1) | info | i). */
	for (uint8_t i = 1; !rc && done < out_len; i++) {
		size_t n = out_len - done < 32 ? out_len - done : 32;

		rc = hmac(prk, 32, t, t_len, info, info_len, &i, 1, t);
		t_len = 32;
		memcpy(out + done, t, n);
		done += n;
	}
	memset(prk, 0, sizeof(prk));
	memset(t, 0, sizeof(t));
	return rc;
}

/* ---- a QP's keys ---------------------------------------------------------- */

/* A GID as 16 bytes: IPv4 as ::ffff:a.b.c.d (RFC 4291 2.5.5.2), the form
 * RoCEv2 gives it, so that both ends derive from the same bytes. */
void ur__crypt_gid16(bool v6, const uint8_t *a, uint8_t out[16])
{
	if (v6) {
		memcpy(out, a, 16);
		return;
	}
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, a, 4);
}

/* Derive and install the key of one direction. @tx: ours (source = this
 * end), else the peer's. info = "uroce crypt v1" | alg | epoch | src GID |
 * src QPN | dst GID | dst QPN; salt = session id. */
static int derive(struct ur_qp *qp, struct ur_crypt_key *k, uint64_t sid,
		  uint64_t epoch, bool tx)
{
	static const char label[] = "uroce crypt v1";
	struct ur_qp_crypt *c = &qp->priv->crypt;
	const struct ur_ipudp *pa = &qp->priv->attr.path;
	uint8_t info[sizeof(label) - 1 + 1 + 8 + 2 * (16 + 4)];
	uint8_t salt[8 + 2 * UR_CRYPT_NONCE_LEN];
	uint8_t okm[32 + 4], *p = info;
	uint32_t me = qp->qpn, peer = qp->priv->attr.dest_qp_num;
	uint32_t klen = ur_crypt_key_len(c->alg);
	int rc;

	memcpy(p, label, sizeof(label) - 1);
	p += sizeof(label) - 1;
	*p++ = c->alg;
	ur_put64(p, epoch);
	p += 8;
	ur__crypt_gid16(pa->v6, tx ? pa->src : pa->dst, p);
	ur_put32(p + 16, tx ? me : peer);
	ur__crypt_gid16(pa->v6, tx ? pa->dst : pa->src, p + 20);
	ur_put32(p + 36, tx ? peer : me);
	/* salt = session id | the sender's nonce | the receiver's (zero when
	 * nothing was negotiated: keys set directly). */
	ur_put64(salt, sid);
	memcpy(salt + 8, tx ? c->nonce_l : c->nonce_p, UR_CRYPT_NONCE_LEN);
	memcpy(salt + 8 + UR_CRYPT_NONCE_LEN, tx ? c->nonce_p : c->nonce_l,
	       UR_CRYPT_NONCE_LEN);
	rc = ur_crypt_hkdf(salt, sizeof(salt), c->ikm, sizeof(c->ikm), info,
			   sizeof(info), okm, klen + 4);
	if (!rc)
		rc = key_open(&k->hd, c->alg, okm);
	memcpy(k->salt, okm + klen, 4);
	memset(okm, 0, sizeof(okm));
	k->sid = sid;
	k->epoch = epoch;
	k->valid = !rc;
	return rc;
}

static void iv_of(const struct ur_crypt_key *k, uint64_t seq, uint8_t iv[12])
{
	memcpy(iv, k->salt, 4);
	ur_put64(iv + 4, seq);
}

void ur__crypt_seal(struct ur_qp *qp, struct ur_pktbuf *b, uint32_t hdr_len,
		    uint32_t payload_len)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	uint8_t *ct = b->data + hdr_len, *tr = ct + payload_len, iv[12];
	const uint8_t *in = b->ext ? b->ext : ct;
	uint64_t seq = c->tx_seq++;
	uint64_t epoch = seq >> UR_CRYPT_EPOCH_SHIFT;
	int rc = 0;

	b->data[4] |= UR_BTH_EXT_CRYPT; /* before: the BTH is authenticated */
	if (!c->tx.valid || c->tx.epoch != epoch || c->tx.sid != c->tx_sid)
		rc = derive(qp, &c->tx, c->tx_sid, epoch, true);
	ur_put64(tr, c->tx_sid);
	ur_put64(tr + 8, seq);
	if (!rc) {
		iv_of(&c->tx, seq, iv);
		rc = gcm_run(c->tx.hd, iv, b->data, hdr_len, in, ct,
			     payload_len, tr + 16, true);
	}
	if (rc) {
		/* Never a plaintext byte on the wire: send what cannot verify
		 * (the peer drops it, our retransmission timer recovers). */
		memset(ct, 0, payload_len);
		memset(tr + 16, 0, UR_CRYPT_TAG_LEN);
		qp->dev->cnt.tx_drop_io++;
	}
	b->ext = NULL;
	qp->dev->cnt.tx_sealed++;
}

/* The replay window (RFC 4303 3.4.3): a ring of bits by seq. */
static bool win_seen(const struct ur_qp_crypt *c, uint64_t seq)
{
	if (!c->rx_any || seq > c->rx_top)
		return false;
	if (c->rx_top - seq >= UR_CRYPT_REPLAY_WIN)
		return true; /* too old to tell: taken as seen */
	seq %= UR_CRYPT_REPLAY_WIN;
	return c->rx_win[seq / 64] >> (seq % 64) & 1;
}

static void win_mark(struct ur_qp_crypt *c, uint64_t seq)
{
	uint64_t i;

	if (!c->rx_any || seq - c->rx_top >= UR_CRYPT_REPLAY_WIN) {
		if (!c->rx_any || seq > c->rx_top) {
			memset(c->rx_win, 0, sizeof(c->rx_win));
			c->rx_top = seq;
		}
		c->rx_any = true;
	} else if (seq > c->rx_top) {
		for (i = c->rx_top + 1; i < seq; i++) {
			uint64_t j = i % UR_CRYPT_REPLAY_WIN;

			c->rx_win[j / 64] &= ~(1ull << (j % 64));
		}
		c->rx_top = seq;
	}
	seq %= UR_CRYPT_REPLAY_WIN;
	c->rx_win[seq / 64] |= 1ull << (seq % 64);
}

/* The receive key for (@sid, @epoch): one of the two kept, or derived into
 * the older slot. Once the peer's session is known only it and the epochs
 * next to the newest seen are tried, so a forged packet costs at most one
 * derivation, and only before the first packet verified. */
static struct ur_crypt_key *rx_key(struct ur_qp *qp, uint64_t sid,
				   uint64_t epoch)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	struct ur_crypt_key *k = NULL;
	uint64_t top_epoch = c->rx_top >> UR_CRYPT_EPOCH_SHIFT;

	for (int i = 0; i < 2; i++)
		if (c->rx[i].valid && c->rx[i].sid == sid &&
		    c->rx[i].epoch == epoch)
			return &c->rx[i];
	if (c->rx_locked && (sid != c->rx_sid || epoch + 1 < top_epoch ||
			     epoch > top_epoch + 1))
		return NULL;
	k = !c->rx[0].valid ? &c->rx[0]
	  : !c->rx[1].valid ? &c->rx[1]
	  : c->rx[0].epoch <= c->rx[1].epoch ? &c->rx[0] : &c->rx[1];
	return derive(qp, k, sid, epoch, false) ? NULL : k;
}

int ur__crypt_open(struct ur_qp *qp, const struct ur_pkt *pkt,
		   struct ur_pkt *out)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	uint32_t hdr_len = (uint32_t)(pkt->payload - pkt->bth), len;
	const uint8_t *tr;
	uint8_t iv[12], tag[UR_CRYPT_TAG_LEN];
	struct ur_crypt_key *k;
	uint64_t sid, seq;
	int rc;

	if (!pkt->trailer)
		return -EBADMSG; /* plain */
	len = pkt->payload_len;
	if (len > c->buf_cap)
		return -EBADMSG;
	tr = pkt->trailer;
	sid = ur_get64(tr);
	seq = ur_get64(tr + 8);
	if (c->rx_locked && sid == c->rx_sid && win_seen(c, seq))
		return -EALREADY;
	k = rx_key(qp, sid, seq >> UR_CRYPT_EPOCH_SHIFT);
	if (!k)
		return -EBADMSG;
	iv_of(k, seq, iv);
	memcpy(tag, tr + 16, sizeof(tag));
	rc = gcm_run(k->hd, iv, pkt->bth, hdr_len, pkt->payload, c->buf, len,
		     tag, false);
	if (rc) {
		if (!c->rx_locked)
			k->valid = false; /* a forged session id: forget it */
		return -EBADMSG;
	}
	if (!c->rx_locked) {
		c->rx_locked = true;
		c->rx_sid = sid;
		c->rx_any = false;
	}
	win_mark(c, seq);
	*out = *pkt;
	out->payload = c->buf;
	out->payload_len = len;
	out->trailer = NULL;
	qp->dev->cnt.rx_opened++;
	return 0;
}

void ur__crypt_reset(struct ur_qp *qp)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;

	ur_crypt_random(&c->tx_sid, sizeof(c->tx_sid));
	c->tx_seq = 0;
	c->tx.valid = c->rx[0].valid = c->rx[1].valid = false;
	c->rx_locked = c->rx_any = false;
	c->rx_top = 0;
	memset(c->rx_win, 0, sizeof(c->rx_win));
}

void ur__crypt_free(struct ur_qp *qp)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;

	uint8_t policy = c->policy, neg = c->neg;

	gcry_cipher_close(c->tx.hd);
	gcry_cipher_close(c->rx[0].hd);
	gcry_cipher_close(c->rx[1].hd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->policy = policy;
	c->neg = neg;
}

/* Encrypted QPs without jumbo packets keep 4 KiB, not 16. */
int ur__crypt_buf(struct ur_qp *qp)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	uint32_t need = qp->priv->jumbo.enable ? UR_CRYPT_MAX_PAYLOAD : 4096;
	uint8_t *b;

	if (!c->alg || c->buf_cap >= need)
		return 0;
	b = malloc(need);
	if (!b)
		return -ENOMEM;
	free(c->buf);
	c->buf = b;
	c->buf_cap = need;
	return 0;
}

int ur_qp_set_crypt(struct ur_qp *qp, unsigned int alg, const uint8_t *key)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;

	if (alg == UR_CRYPT_NONE) {
		ur__crypt_free(qp);
		return 0;
	}
	/* Asked for, it wins over selective repeat that was only
	 * negotiable (the default), whose held packets stay raw. */
	if (qp->priv->sr.p.enable == UR_SR_AUTO && !qp->priv->sr.nheld &&
	    ur_crypt_key_len(alg) && key)
		qp->priv->sr.p.enable = 0;
	if (!ur_crypt_key_len(alg) || !key ||
	    (qp->type != UR_QPT_RC && qp->type != UR_QPT_UC) || qp->xrc ||
	    qp->priv->sr.p.enable)
		return -EINVAL;
	if (ur_crypt_alg_check(alg))
		return -EOPNOTSUPP;
	c->alg = (uint8_t)alg;
	if (ur__crypt_buf(qp)) {
		ur__crypt_free(qp);
		return -ENOMEM;
	}
	memcpy(c->ikm, key, UR_CRYPT_KEY_LEN);
	ur__crypt_reset(qp);
	return 0;
}

uint32_t ur_qp_crypt_state(const struct ur_qp *qp)
{
	const struct ur_qp_crypt *c = &qp->priv->crypt;

	return (c->alg ? 1u : 0) | (c->rx_locked ? 2u : 0) |
	       (uint32_t)c->alg << 8;
}
