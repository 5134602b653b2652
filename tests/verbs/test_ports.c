// SPDX-License-Identifier: MIT
/*
 * A device with two ports (UROCE_PORTS, docs/ports-classes.md "Ports"):
 * both ports answer the queries with their own GIDs (the GID table lists
 * both ports' entries), MTU and state, a port
 * past the last is refused, a UD AV of port 1 is refused by a QP of port 2,
 * and port 2's interface going down and up raises IBV_EVENT_PORT_ERR and
 * IBV_EVENT_PORT_ACTIVE and is seen by ibv_query_port. Run by ports.sh in a
 * namespace where UROCE_PORTS=<if1>,<if2> names two veths:
 *   test_ports IF2 IP1 IP2
 * With one port (UROCE_IP=<IP1>, its interface IF1): the same events.
 *   test_ports --one IF1 IP1
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_test.h"

static void gid_is(struct ibv_context *c, uint8_t port, const char *ip)
{
	union ibv_gid g, want = { .raw = { [10] = 0xff, [11] = 0xff } };

	ASSERT(inet_pton(AF_INET, ip, want.raw + 12) == 1);
	ASSERT_EQ(ibv_query_gid(c, port, 0, &g), 0);
	if (memcmp(&g, &want, sizeof(g)))
		UR_FAIL("port %u GID 0 is not ::ffff:%s", port, ip);
}

static enum ibv_port_state port_state(struct ibv_context *c, uint8_t port)
{
	struct ibv_port_attr pa;

	ASSERT_EQ(ibv_query_port(c, port, &pa), 0);
	return pa.state;
}

/* The next async event within 5 s (a link message takes milliseconds;
 * the bound is for a loaded machine, not a timing verdict). */
static void expect_event(struct ibv_context *c, enum ibv_event_type t,
			 int port)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&p, 1, 5000) != 1)
		UR_FAIL("no %s event", ibv_event_type_str(t));
	ASSERT_EQ(ibv_get_async_event(c, &ev), 0);
	if (ev.event_type != t)
		UR_FAIL("event %s, not %s", ibv_event_type_str(ev.event_type),
			ibv_event_type_str(t));
	ASSERT_EQ(ev.element.port_num, port);
	ibv_ack_async_event(&ev);
}

static void ip_link(const char *ifname, const char *updown)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set %s %s", ifname, updown);
	ASSERT_EQ(system(cmd), 0);
}

/* A device of one port (UROCE_IP) follows its link as well. */
static int one_port(const char *ifname, const char *ip)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c;
	struct ibv_device_attr da;

	ASSERT(list && list[0]);
	c = ibv_open_device(list[0]);
	ASSERT(c);
	ASSERT_EQ(ibv_query_device(c, &da), 0);
	ASSERT_EQ(da.phys_port_cnt, 1);
	gid_is(c, 1, ip);
	ASSERT_EQ(port_state(c, 1), IBV_PORT_ACTIVE);
	ip_link(ifname, "down");
	expect_event(c, IBV_EVENT_PORT_ERR, 1);
	ASSERT_EQ(port_state(c, 1), IBV_PORT_DOWN);
	ip_link(ifname, "up");
	expect_event(c, IBV_EVENT_PORT_ACTIVE, 1);
	ASSERT_EQ(port_state(c, 1), IBV_PORT_ACTIVE);
	ASSERT_EQ(ibv_close_device(c), 0);
	ibv_free_device_list(list);
	printf("one port: link events\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *c;
	struct ibv_device_attr da;
	struct ibv_port_attr pa1, pa2;
	struct ibv_ah_attr aa;
	union ibv_gid g;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_send_wr wr, *bad;
	int n;

	if (argc != 4) {
		fprintf(stderr, "usage: test_ports IF2 IP1 IP2 | --one IF1 IP1\n");
		return 2;
	}
	if (!strcmp(argv[1], "--one"))
		return one_port(argv[2], argv[3]);
	list = ibv_get_device_list(&n);
	ASSERT(list);
	ASSERT_EQ(n, 1);
	c = ibv_open_device(list[0]);
	ASSERT(c);
	ASSERT_EQ(ibv_query_device(c, &da), 0);
	ASSERT_EQ(da.phys_port_cnt, 2);

	/* Each port its own GID table, MTU and state; no port 3. */
	gid_is(c, 1, argv[2]);
	gid_is(c, 2, argv[3]);
	ASSERT_EQ(ibv_query_port(c, 1, &pa1), 0);
	ASSERT_EQ(ibv_query_port(c, 2, &pa2), 0);
	ASSERT_EQ(pa1.state, IBV_PORT_ACTIVE);
	ASSERT_EQ(pa2.state, IBV_PORT_ACTIVE);
	ASSERT_EQ(pa1.active_mtu, IBV_MTU_1024); /* 1500-byte veths, as rxe */
	ASSERT_EQ(pa2.active_mtu, IBV_MTU_1024);
	ASSERT_EQ(pa1.link_layer, IBV_LINK_LAYER_ETHERNET);
	/* The whole table lists every port's entries with their port. */
	{
		struct ibv_gid_entry ge[2 * 64], one;
		ssize_t k = ibv_query_gid_table(c, ge, 2 * 64, 0);
		int on2 = 0;

		ASSERT_GE(k, 2);
		for (ssize_t i = 0; i < k; i++) {
			ASSERT(ge[i].port_num == 1 || ge[i].port_num == 2);
			on2 += ge[i].port_num == 2;
		}
		ASSERT_GE(on2, 1);
		ASSERT_EQ(ibv_query_gid_ex(c, 2, 0, &one, 0), 0);
		ASSERT_EQ(one.port_num, 2);
		ASSERT_EQ(one.gid_type, IBV_GID_TYPE_ROCE_V2);
	}
	ASSERT_NE(ibv_query_port(c, 3, &pa1), 0);
	ASSERT_NE(ibv_query_port(c, 0, &pa1), 0);
	ASSERT_NE(ibv_query_gid(c, 3, 0, &g), 0);

	/* A UD QP on port 2: its QP attributes say port 2, and an AV of
	 * port 1 is refused at the post (IBV_DEVICE_UD_AV_PORT_ENFORCE). */
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	ASSERT(pd && cq);
	memset(&qi, 0, sizeof(qi));
	qi.send_cq = qi.recv_cq = cq;
	qi.qp_type = IBV_QPT_UD;
	qi.cap.max_send_wr = qi.cap.max_recv_wr = 4;
	qi.cap.max_send_sge = qi.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qi);
	ASSERT(qp);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 3;
	qa.qkey = 0x11111111;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_QKEY), EINVAL);
	qa.port_num = 2;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_QKEY), 0);
	qa.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 1;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_PORT, &qia), 0);
	ASSERT_EQ(qa.port_num, 2);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	ASSERT_EQ(ibv_query_gid(c, 2, 0, &aa.grh.dgid), 0);
	ah = ibv_create_ah(pd, &aa);
	ASSERT(ah);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	ASSERT_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	ibv_destroy_ah(ah);
	ASSERT_EQ(ibv_destroy_qp(qp), 0);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);

	/* Port 2's link down and up: events on the async queue, and the
	 * state the query reports; port 1 stays active. */
	ip_link(argv[1], "down");
	expect_event(c, IBV_EVENT_PORT_ERR, 2);
	ASSERT_EQ(port_state(c, 2), IBV_PORT_DOWN);
	ASSERT_EQ(port_state(c, 1), IBV_PORT_ACTIVE);
	ip_link(argv[1], "up");
	expect_event(c, IBV_EVENT_PORT_ACTIVE, 2);
	ASSERT_EQ(port_state(c, 2), IBV_PORT_ACTIVE);

	ASSERT_EQ(ibv_close_device(c), 0);
	ibv_free_device_list(list);
	printf("two ports: GIDs, MTU, state, UD AV port, link events\n");
	return 0;
}
