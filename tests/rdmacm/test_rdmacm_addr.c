// SPDX-License-Identifier: MIT
/*
 * Addresses as Linux's rdma_cm and rdma-core's librdmacm answer them, where
 * libfabric's verbs provider depends on it (/work/shared/clients/README.md,
 * bindprobe.txt): a loopback address binds with no device, a device address
 * with its device, any other fails; rdma_getaddrinfo with neither node nor
 * service returns the hints' addresses. Runs with UROCE_IP=127.0.0.2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "ur_test.h"

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* Bind a fresh id to @sa; returns rdma_bind_addr's result (errno in *err). */
static int bind_one(struct sockaddr *sa, bool *has_verbs, int *err)
{
	struct rdma_cm_id *id;
	int ret;

	ASSERT_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	ret = rdma_bind_addr(id, sa);
	*err = ret ? errno : 0;
	*has_verbs = id->verbs != NULL;
	if (!ret && id->verbs)
		ASSERT_EQ(id->port_num, 1);
	rdma_destroy_id(id);
	return ret;
}

static void t_bind(void)
{
	struct sockaddr_in a;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	bool v;
	int err;

	a = sin4("127.0.0.1", 0); /* loopback, not the device's */
	ASSERT_EQ(bind_one((struct sockaddr *)&a, &v, &err), 0);
	ASSERT(!v);
	a = sin4("127.0.0.2", 0); /* the device's */
	ASSERT_EQ(bind_one((struct sockaddr *)&a, &v, &err), 0);
	ASSERT(v);
	a = sin4("0.0.0.0", 0);
	ASSERT_EQ(bind_one((struct sockaddr *)&a, &v, &err), 0);
	ASSERT(!v);
	a6.sin6_addr = in6addr_loopback;
	ASSERT_EQ(bind_one((struct sockaddr *)&a6, &v, &err), 0);
	ASSERT(!v);
	a = sin4("192.0.2.7", 0); /* TEST-NET-1: nobody's */
	ASSERT_EQ(bind_one((struct sockaddr *)&a, &v, &err), -1);
	ASSERT_EQ(err, EADDRNOTAVAIL);
}

static void t_getaddrinfo_hints(void)
{
	struct sockaddr_in src = sin4("127.0.0.2", 7471), dst = sin4("127.0.0.3", 7472);
	struct rdma_addrinfo h = { 0 }, *r = NULL;

	/* No node, no service: the hints' source (libfabric's passive case). */
	h.ai_flags = RAI_PASSIVE;
	h.ai_port_space = RDMA_PS_TCP;
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	ASSERT_EQ(rdma_getaddrinfo(NULL, NULL, &h, &r), 0);
	ASSERT_EQ(r->ai_family, AF_INET);
	ASSERT_EQ(r->ai_port_space, RDMA_PS_TCP);
	ASSERT_EQ(r->ai_src_len, sizeof(src));
	ASSERT_MEM_EQ(r->ai_src_addr, &src, sizeof(src));
	ASSERT(!r->ai_dst_addr);
	rdma_freeaddrinfo(r);

	/* Both from the hints. */
	h.ai_flags = 0;
	h.ai_dst_addr = (struct sockaddr *)&dst;
	h.ai_dst_len = sizeof(dst);
	ASSERT_EQ(rdma_getaddrinfo(NULL, NULL, &h, &r), 0);
	ASSERT_MEM_EQ(r->ai_src_addr, &src, sizeof(src));
	ASSERT_MEM_EQ(r->ai_dst_addr, &dst, sizeof(dst));
	rdma_freeaddrinfo(r);

	/* A node still wins over the hints' destination. */
	ASSERT_EQ(rdma_getaddrinfo("127.0.0.4", "7473", &h, &r), 0);
	ASSERT_EQ(((struct sockaddr_in *)r->ai_dst_addr)->sin_addr.s_addr,
		  htonl(0x7f000004));
	ASSERT_MEM_EQ(r->ai_src_addr, &src, sizeof(src));
	rdma_freeaddrinfo(r);

	/* Nothing at all, or hints without an address. */
	ASSERT_EQ(rdma_getaddrinfo(NULL, NULL, NULL, &r), -1);
	ASSERT_EQ(errno, EINVAL);
	memset(&h, 0, sizeof(h));
	ASSERT_EQ(rdma_getaddrinfo(NULL, NULL, &h, &r), -1);
	ASSERT_EQ(errno, EINVAL);
}

static const struct ur_test_case tests[] = {
	{ "bind", t_bind },
	{ "getaddrinfo_hints", t_getaddrinfo_hints },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)
