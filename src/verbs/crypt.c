// SPDX-License-Identifier: MIT
/*
 * Encryption policy from the environment (docs/security.md "Encryption"):
 *   UROCE_CRYPT=off|allow|require off (the default): plain RoCEv2;
 *                                  allow: each RC/UC QP negotiates with its
 *                                  peer at RTR, sealed if the peer has the
 *                                  key, else plain; require: sealed or
 *                                  nothing (the QP fails)
 *   UROCE_CRYPT_KEY=<file>        the administrator's key: 32 bytes, raw
 *                                  or as 64 hex digits (a newline may
 *                                  follow); the file must be the user's
 *                                  and readable by its owner only
 *   UROCE_CRYPT_ALG=aes-256-gcm|sm4-gcm   (default aes-256-gcm)
 * A bad setting fails ibv_open_device with a message naming it: a program
 * that asked for encryption never runs plain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ur_crypt.h"
#include "urv.h"
#include "ur_settings.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The key file: 32 raw bytes, or 64 hex digits and an optional newline. */
static int parse_key(const uint8_t *b, size_t n, uint8_t key[32])
{
	if (n == UR_CRYPT_KEY_LEN) {
		memcpy(key, b, UR_CRYPT_KEY_LEN);
		return 0;
	}
	if (n == 65 && b[64] == '\n')
		n = 64;
	if (n != 64)
		return -EINVAL;
	for (int i = 0; i < 32; i++) {
		int hi = hexval(b[2 * i]), lo = hexval(b[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/**
 * urv__crypt_key_load() - read the administrator's key from @path.
 * Return: 0, or a negative errno after a message on stderr that names
 * UROCE_CRYPT_KEY and what is wrong.
 */
int urv__crypt_key_load(const char *path, uint8_t key[32])
{
	uint8_t buf[80];
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "uroce: UROCE_CRYPT_KEY=%s: %s\n", path,
			strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "uroce: UROCE_CRYPT_KEY=%s: not a regular "
			"file\n", path);
		rc = -EINVAL;
	} else if (st.st_mode & 077) {
		/* As ssh does with a private key: refuse, do not guess. */
		fprintf(stderr, "uroce: UROCE_CRYPT_KEY=%s: mode %04o lets "
			"group or others at the key; it must be readable by "
			"its owner only (chmod 600 %s)\n", path,
			(unsigned int)(st.st_mode & 07777), path);
		rc = -EPERM;
	} else if (st.st_uid != geteuid()) {
		fprintf(stderr, "uroce: UROCE_CRYPT_KEY=%s: owned by uid %u, "
			"not by this user (%u)\n", path,
			(unsigned int)st.st_uid, (unsigned int)geteuid());
		rc = -EPERM;
	} else {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 || parse_key(buf, (size_t)n, key)) {
			fprintf(stderr, "uroce: UROCE_CRYPT_KEY=%s: must hold "
				"32 bytes, raw or as 64 hex digits\n", path);
			rc = -EINVAL;
		}
	}
	memset(buf, 0, sizeof(buf));
	close(fd);
	return rc;
}

/* A negotiation MAD of @qp to QP1 of the peer (the transport calls this
 * with the QP's lock held). Slot 0: towards our own address the kernel
 * picks a sibling, which passes it to the QPN's (src/io/gsi.c). */
static void hello_send(struct ur_dev *dev, struct ur_qp *qp,
		       const struct ur_ipudp *dst, const uint8_t *mad)
{
	(void)qp;
	(void)ur_engine_gsi_send(dev->host, dst, 0, mad, UR_CRYPT_HELLO_LEN);
}

int urv__crypt_dev_init(struct ur_dev *dev)
{
	/* UROCE_CRYPT was checked with the device's settings (settings.c);
	 * the key file and the algorithm's name are checked here. */
	unsigned long long v = ur_setting_val("UROCE_CRYPT");
	const char *pol = v == 2 ? "require" : "allow";
	const char *path = getenv("UROCE_CRYPT_KEY");
	const char *alg_s = getenv("UROCE_CRYPT_ALG");
	int alg = UR_CRYPT_AES256GCM, rc;
	uint8_t policy;

	dev->crypt_alg = UR_CRYPT_NONE;
	dev->crypt_policy = UR_CRYPT_POLICY_OFF;
	if (v == 0)
		return 0;
	policy = v == 2 ? UR_CRYPT_POLICY_REQUIRE : UR_CRYPT_POLICY_ALLOW;
	if (alg_s && *alg_s) {
		alg = ur_crypt_alg_parse(alg_s);
		if (alg <= 0) {
			fprintf(stderr, "uroce: UROCE_CRYPT_ALG=\"%s\": must "
				"be \"aes-256-gcm\" or \"sm4-gcm\"\n", alg_s);
			return -EINVAL;
		}
	}
	if (ur_crypt_alg_check((unsigned int)alg)) {
		fprintf(stderr, "uroce: UROCE_CRYPT_ALG=%s: this libgcrypt "
			"does not offer it\n", ur_crypt_alg_name((unsigned int)alg));
		return -EOPNOTSUPP;
	}
	if (!path || !*path) {
		fprintf(stderr, "uroce: UROCE_CRYPT=%s needs "
			"UROCE_CRYPT_KEY=<file with the 32-byte key>\n", pol);
		return -EINVAL;
	}
	rc = urv__crypt_key_load(path, dev->crypt_key);
	if (rc)
		return rc;
	dev->crypt_alg = (uint8_t)alg;
	dev->crypt_policy = policy;
	dev->crypt_hello_send = hello_send;
	return 0;
}
