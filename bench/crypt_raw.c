// SPDX-License-Identifier: MIT
/*
 * crypt-raw: what one core spends sealing and opening one packet with
 * libgcrypt's GCM, the way src/transport/ur_crypt.c does it (one keyed
 * handle; per packet: set the IV, the headers as additional data, the
 * payload, the tag), for AES-256-GCM and SM4-GCM at 8 B, 1 KiB and
 * 4 KiB. The ceiling of an encrypted stream on this machine, next to
 * bench/crypt.sh's end-to-end figures.
 *   crypt-raw [ITERATIONS]   (default 100000)
 */
#include <gcrypt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int algo, key_len; } algs[] = {
		{ "aes-256-gcm", GCRY_CIPHER_AES256, 32 },
		{ "sm4-gcm", GCRY_CIPHER_SM4, 16 },
	};
	static const unsigned int sizes[] = { 8, 1024, 4096 };
	static unsigned char in[4096 + 64], out[4096 + 64], key[32], iv[12],
		aad[28], tag[16];
	long n = argc > 1 ? atol(argv[1]) : 100000;

	if (n <= 0 || !gcry_check_version(GCRYPT_VERSION)) {
		fprintf(stderr, "usage: crypt-raw [ITERATIONS > 0]\n");
		return 2;
	}
	gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
	gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	printf("libgcrypt %s, %ld packets each\n", gcry_check_version(NULL), n);
	printf("%-12s %6s %10s %10s %10s\n", "algorithm", "bytes", "seal_us",
	       "open_us", "GB/s_open");
	for (size_t a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		gcry_cipher_hd_t h;

		if (gcry_cipher_open(&h, algs[a].algo, GCRY_CIPHER_MODE_GCM, 0) ||
		    gcry_cipher_setkey(h, key, (size_t)algs[a].key_len)) {
			printf("%-12s not available\n", algs[a].name);
			continue;
		}
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			unsigned int len = sizes[s];
			double t0 = now_s(), seal, open;

			for (long i = 0; i < n; i++) {
				iv[11] = (unsigned char)i;
				gcry_cipher_setiv(h, iv, sizeof(iv));
				gcry_cipher_authenticate(h, aad, sizeof(aad));
				gcry_cipher_encrypt(h, out + 28, len, in, len);
				gcry_cipher_gettag(h, tag, sizeof(tag));
			}
			seal = (now_s() - t0) / (double)n;
			t0 = now_s();
			for (long i = 0; i < n; i++) {
				iv[11] = (unsigned char)i;
				gcry_cipher_setiv(h, iv, sizeof(iv));
				gcry_cipher_authenticate(h, aad, sizeof(aad));
				gcry_cipher_decrypt(h, in, len, out + 28, len);
				(void)gcry_cipher_checktag(h, tag, sizeof(tag));
			}
			open = (now_s() - t0) / (double)n;
			printf("%-12s %6u %10.3f %10.3f %10.2f\n", algs[a].name,
			       len, seal * 1e6, open * 1e6, len / open / 1e9);
		}
		gcry_cipher_close(h);
	}
	return 0;
}
