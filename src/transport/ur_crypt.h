/* SPDX-License-Identifier: MIT */
/*
 * Per-connection encryption and authentication of RC/UC packets, a uroce
 * extension (docs/wire.md "Encryption", docs/security.md). Cipher, MAC and
 * KDF primitives are libgcrypt's: AES-256-GCM and SM4-GCM (NIST SP
 * 800-38D, RFC 8998), HKDF over HMAC-SHA256 (RFC 5869). No cipher code of
 * our own.
 *
 * A sealed packet: BTH (byte 4 carries UR_BTH_EXT_CRYPT) | extension
 * headers | ciphertext of the payload | trailer | pad | ICRC. The trailer
 * is the sender's session id (8), the packet's sequence number (8) and the
 * GCM tag (16); the BTH and extension headers are the additional data.
 */
#ifndef UR_CRYPT_H
#define UR_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ur_wire.h"

#define UR_CRYPT_SID_LEN 8
#define UR_CRYPT_SEQ_LEN 8
#define UR_CRYPT_TAG_LEN 16
#define UR_CRYPT_TRAILER (UR_CRYPT_SID_LEN + UR_CRYPT_SEQ_LEN + UR_CRYPT_TAG_LEN)
_Static_assert(UR_CRYPT_TRAILER == UR_CRYPT_TRAILER_LEN, "the decoder's");
#define UR_CRYPT_IV_LEN 12
#define UR_CRYPT_KEY_LEN 32     /* the administrator's key */
/* The largest payload a sealed packet carries: the path MTU, at most 4096,
 * or a jumbo packet's 16 KiB (docs/wire.md "Jumbo packets"; the open
 * buffer grows to it when jumbo packets are turned on, ur__crypt_buf). */
#define UR_CRYPT_MAX_PAYLOAD UR_JUMBO_MTU
/* A new key every 2^24 packets of a direction (the key's epoch is
 * seq >> UR_CRYPT_EPOCH_SHIFT): well inside the 2^32 invocations NIST SP
 * 800-38D 8.3 allows a GCM key, and the TLS 1.3 limit (RFC 8446 5.5) of
 * 2^24.5 full records per AES-GCM key. */
#define UR_CRYPT_EPOCH_SHIFT 24
/* Sequence numbers behind the highest verified one that are still taken
 * once (RFC 4303 3.4.3's sliding window): network reordering only, since
 * a retransmission is sealed afresh with a new number. */
#define UR_CRYPT_REPLAY_WIN 1024

/* The algorithms: name, key length in bytes. Values are wire-stable (they
 * enter the key derivation). */
#define UR_CRYPT_ALGS(X)                                                     \
	X(NONE, 0, "none", 0)                                                \
	X(AES256GCM, 1, "aes-256-gcm", 32)                                   \
	X(SM4GCM, 2, "sm4-gcm", 16)
enum ur_crypt_alg {
#define UR_X(n, v, s, k) UR_CRYPT_##n = v,
	UR_CRYPT_ALGS(UR_X)
#undef UR_X
};

/* Policy of a device (UROCE_CRYPT): off, allow (sealed when the peer
 * negotiates it, else plain), require (sealed or nothing). */
enum ur_crypt_policy {
	UR_CRYPT_POLICY_OFF, UR_CRYPT_POLICY_ALLOW, UR_CRYPT_POLICY_REQUIRE,
};
/* A QP's negotiation (ur_qp_crypt_neg). */
enum ur_crypt_neg {
	UR_CRYPT_NEG_NONE,    /* no negotiation: plain, or keys set directly */
	UR_CRYPT_NEG_PENDING, /* hello sent, nothing moves meanwhile */
	UR_CRYPT_NEG_SEALED,  /* both nonces known: sealed */
	UR_CRYPT_NEG_PLAIN,   /* policy allow, no answer: plain */
	UR_CRYPT_NEG_FAILED,  /* policy require, no answer: QP in error */
};
/* How long a QP waits for the peer's hello before it goes on plain
 * (allow) or fails (require). */
#define UR_CRYPT_NEG_ALLOW_NS 300000000ull
#define UR_CRYPT_NEG_REQUIRE_NS 3000000000ull

/* The negotiation MAD (ur_crypt_neg.c; docs/wire.md "Encryption
 * negotiation"): to QP1, vendor class 0x0A, attribute 0xFF01. */
#define UR_CRYPT_HELLO_ATTR 0xFF01
#define UR_CRYPT_HELLO_LEN 256
#define UR_CRYPT_NONCE_LEN 16
struct ur_crypt_hello {
	bool answer;
	uint8_t alg;
	uint32_t src_qpn, dst_qpn;
	uint8_t nonce[UR_CRYPT_NONCE_LEN], echo[UR_CRYPT_NONCE_LEN];
};
/* 0 if @mad is a hello (its fields in @h), else -EBADMSG. Total. */
int ur_crypt_hello_parse(const uint8_t *mad, size_t len,
			 struct ur_crypt_hello *h);
/* HMAC-SHA256 (RFC 2104) of @msg. 0 or -EIO. */
int ur_crypt_hmac(const uint8_t *key, size_t key_len, const uint8_t *msg,
		  size_t len, uint8_t out[32]);
/* Constant-time inequality of two byte strings (a MAC, a nonce). */
bool ur_crypt_memneq(const uint8_t *a, const uint8_t *b, size_t n);

/* "aes-256-gcm" etc., NULL for an unknown value. */
const char *ur_crypt_alg_name(unsigned int alg);
/* The value of a name (also "aes", "sm4"), or -EINVAL. */
int ur_crypt_alg_parse(const char *s);
/* 0 if libgcrypt offers @alg in GCM mode, else -EOPNOTSUPP. */
int ur_crypt_alg_check(unsigned int alg);
/* Key bytes of @alg, 0 for none/unknown. */
uint32_t ur_crypt_key_len(unsigned int alg);

/*
 * One GCM operation (the unit tests check it against published vectors).
 * Seal: @out = E(@in), @tag written. Open: @out = D(@in) and the tag
 * checked: -EBADMSG when it does not match (then @out must not be used).
 * @iv is 12 bytes. @in may equal @out. -EINVAL for an unknown @alg,
 * -EIO if libgcrypt fails.
 */
int ur_crypt_aead(unsigned int alg, const uint8_t *key, const uint8_t *iv,
		  const uint8_t *aad, size_t aad_len, const uint8_t *in,
		  uint8_t *out, size_t len, uint8_t *tag, bool seal);
/* HKDF-SHA256, extract then expand (RFC 5869 2.2, 2.3). @out_len up to
 * 255 * 32. 0 or -EINVAL/-EIO. */
int ur_crypt_hkdf(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
		  size_t ikm_len, const uint8_t *info, size_t info_len,
		  uint8_t *out, size_t out_len);
/* Fresh unpredictable bytes (libgcrypt's nonce generator). */
void ur_crypt_random(void *buf, size_t len);

#endif
