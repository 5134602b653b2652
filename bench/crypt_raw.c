// SPDX-License-Identifier: MIT
/*
 * crypt-raw: what one core spends sealing and opening one packet with GCM,
 * the way src/transport/ur_crypt.c does it (one keyed context reused; per
 * packet: set the IV, the headers as additional data, the payload, the
 * tag), for each library and algorithm at 8 B, 1, 4, 8, 16 and 64 KiB:
 * libgcrypt's AES-256-GCM and SM4-GCM, and, when built with OpenSSL,
 * OpenSSL's EVP AES-256-GCM (OpenSSL 3.0 has no SM4-GCM). The ceiling of
 * an encrypted stream on this machine, next to bench/crypt.sh's
 * end-to-end figures. Times are the thread's CPU time per packet.
 *   crypt-raw [BYTES]   (default 256 MiB of payload per row)
 */
#include <gcrypt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef HAVE_OPENSSL
#include <openssl/evp.h>
#endif

#define MAX_LEN 65536
#define AAD_LEN 28 /* BTH + RETH */
#define TAG_LEN 16

/* One library's GCM: a keyed context, one packet sealed or opened. */
struct lib_ops {
	const char *name;
	void *(*open)(const char *alg, const unsigned char *key);
	int (*run)(void *ctx, bool seal, const unsigned char *iv,
		   const unsigned char *aad, const unsigned char *in,
		   unsigned char *out, unsigned int len, unsigned char *tag);
	void (*close)(void *ctx);
};

static void *g_open(const char *alg, const unsigned char *key)
{
	int a = alg[0] == 'a' ? GCRY_CIPHER_AES256 : GCRY_CIPHER_SM4;
	gcry_cipher_hd_t h;

	if (gcry_cipher_open(&h, a, GCRY_CIPHER_MODE_GCM, 0))
		return NULL;
	if (gcry_cipher_setkey(h, key, a == GCRY_CIPHER_SM4 ? 16 : 32)) {
		gcry_cipher_close(h);
		return NULL;
	}
	return h;
}

static int g_run(void *ctx, bool seal, const unsigned char *iv,
		 const unsigned char *aad, const unsigned char *in,
		 unsigned char *out, unsigned int len, unsigned char *tag)
{
	gcry_cipher_hd_t h = ctx;

	gcry_cipher_setiv(h, iv, 12);
	gcry_cipher_authenticate(h, aad, AAD_LEN);
	if (seal) {
		gcry_cipher_encrypt(h, out, len, in, len);
		return gcry_cipher_gettag(h, tag, TAG_LEN) ? -1 : 0;
	}
	gcry_cipher_decrypt(h, out, len, in, len);
	return gcry_cipher_checktag(h, tag, TAG_LEN) ? -1 : 0;
}

static void g_close(void *ctx)
{
	gcry_cipher_close(ctx);
}

#ifdef HAVE_OPENSSL
/* Two contexts, one per direction, each keyed once: per packet only the
 * IV is set (EVP_CipherInit_ex2 with no cipher and no key). */
struct o_ctx {
	EVP_CIPHER_CTX *c[2]; /* [0] open, [1] seal */
};

static void o_close(void *ctx)
{
	struct o_ctx *o = ctx;

	EVP_CIPHER_CTX_free(o->c[0]);
	EVP_CIPHER_CTX_free(o->c[1]);
	free(o);
}

static void *o_open(const char *alg, const unsigned char *key)
{
	struct o_ctx *o = calloc(1, sizeof(*o));

	if (!o || alg[0] != 'a')
		goto fail;
	for (int i = 0; i < 2; i++) {
		o->c[i] = EVP_CIPHER_CTX_new();
		if (!o->c[i] || !EVP_CipherInit_ex2(o->c[i], EVP_aes_256_gcm(),
						    key, NULL, i, NULL))
			goto fail;
	}
	return o;
fail:
	if (o)
		o_close(o);
	return NULL;
}

static int o_run(void *ctx, bool seal, const unsigned char *iv,
		 const unsigned char *aad, const unsigned char *in,
		 unsigned char *out, unsigned int len, unsigned char *tag)
{
	EVP_CIPHER_CTX *c = ((struct o_ctx *)ctx)->c[seal];
	int n;

	if (!EVP_CipherInit_ex2(c, NULL, NULL, iv, seal, NULL) ||
	    !EVP_CipherUpdate(c, NULL, &n, aad, AAD_LEN) ||
	    !EVP_CipherUpdate(c, out, &n, in, (int)len))
		return -1;
	if (!seal && !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag))
		return -1;
	if (!EVP_CipherFinal_ex(c, out + n, &n))
		return -1;
	if (seal && !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag))
		return -1;
	return 0;
}
#endif

static const struct lib_ops libs[] = {
	{ "libgcrypt", g_open, g_run, g_close },
#ifdef HAVE_OPENSSL
	{ "openssl", o_open, o_run, o_close },
#endif
};

static double now_s(void)
{
	struct timespec t;

	/* The thread's CPU time: on a shared machine, what the cipher costs
	 * one core, not how long the scheduler kept it waiting. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const char *algs[] = { "aes-256-gcm", "sm4-gcm" };
	static const unsigned int sizes[] = { 8, 1024, 4096, 8192, 16384, 65536 };
	static unsigned char in[MAX_LEN], out[MAX_LEN], key[32], iv[12],
		aad[AAD_LEN], tag[TAG_LEN];
	double bytes = argc > 1 ? atof(argv[1]) : 256.0 * 1024 * 1024;

	if (bytes <= 0 || !gcry_check_version(GCRYPT_VERSION)) {
		fprintf(stderr, "usage: crypt-raw [BYTES > 0]\n");
		return 2;
	}
	gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
	gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	printf("libgcrypt %s", gcry_check_version(NULL));
#ifdef HAVE_OPENSSL
	printf(", %s", OpenSSL_version(OPENSSL_VERSION));
#endif
	printf("; %.0f MiB per row (at least 20000 packets)\n",
	       bytes / 1048576);
	printf("%-12s %-10s %6s %9s %9s %9s %9s\n", "algorithm", "library",
	       "bytes", "seal_us", "open_us", "GB/s_seal", "GB/s_open");
	for (size_t a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++) {
			void *ctx = libs[l].open(algs[a], key);

			if (!ctx)
				continue; /* (OpenSSL 3.0: no SM4-GCM) */
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				unsigned int len = sizes[s];
				long n = (long)(bytes / len);
				double t0, t[2];
				int bad = 0;

				if (n < 20000)
					n = 20000;
				for (int seal = 1; seal >= 0; seal--) {
					t0 = now_s();
					for (long i = 0; i < n; i++) {
						/* open what the last seal made */
						long k = seal ? i : n - 1;

						iv[11] = (unsigned char)k;
						iv[10] = (unsigned char)(k >> 8);
						bad |= libs[l].run(ctx, seal, iv, aad,
								   seal ? in : out,
								   seal ? out : in,
								   len, tag);
					}
					t[seal] = (now_s() - t0) / (double)n;
				}
				printf("%-12s %-10s %6u %9.3f %9.3f %9.2f %9.2f%s\n",
				       algs[a], libs[l].name, len, t[1] * 1e6,
				       t[0] * 1e6, len / t[1] / 1e9,
				       len / t[0] / 1e9, bad ? "  (a call failed)" : "");
			}
			libs[l].close(ctx);
		}
	}
	return 0;
}
