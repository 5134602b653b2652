// SPDX-License-Identifier: MIT
/*
 * cm-connect: rdma_cm connection setup latency and rate. A server accepts
 * every request (with an RC QP) and a client connects, waits for
 * ESTABLISHED, disconnects and destroys its ID, N times in a row.
 *   cm-connect -s [-a ADDR] [-p PORT] [-n N]          server
 *   cm-connect -c -a ADDR [-p PORT] [-n N] [-q]        client
 * The client prints per-connection setup latency (rdma_connect to
 * ESTABLISHED: REQ, REP, RTU, two QP transitions each side) as median / p99
 * in microseconds, and connections per second over the whole loop
 * (resolve, connect, disconnect, destroy). Plain librdmacm: runs over
 * uroce (uroce-run) or any rdma_cm device.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
static struct rdma_cm_event *wait_ev(struct rdma_event_channel *ch,
				     enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		exit(1);
	}
	if (ev->event != want) {
		fprintf(stderr, "got %s (status %d), wanted %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(want));
		exit(1);
	}
	return ev;
}

/* rdma_create_qp writes the CQs it made back: copy this per QP. */
static const struct ibv_qp_init_attr qp_attr0 = {
	.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
		 .max_recv_sge = 1 },
	.qp_type = IBV_QPT_RC,
};

static int server(struct sockaddr_in *a, int n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l;
	int done = 0;

	if (!ch || rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(l, (struct sockaddr *)a) || rdma_listen(l, 64)) {
		perror("server setup");
		return 1;
	}
	while (done < n) {
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		struct ibv_qp_init_attr qa;
		struct rdma_conn_param cp = { .responder_resources = 1,
					      .initiator_depth = 1,
					      .rnr_retry_count = 7 };

		if (rdma_get_cm_event(ch, &ev))
			return 1;
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			qa = qp_attr0;
			rdma_ack_cm_event(ev);
			if (rdma_create_qp(id, NULL, &qa) ||
			    rdma_accept(id, &cp)) {
				perror("accept");
				return 1;
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			done++;
			break;
		default:
			rdma_ack_cm_event(ev);
			break;
		}
	}
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int client(struct sockaddr_in *a, int n, bool quiet)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	double *lat = calloc((size_t)n, sizeof(double)), t0, t;

	if (!ch || !lat)
		return 1;
	t0 = bench_now_us();
	for (int i = 0; i < n; i++) {
		struct rdma_cm_id *id;
		struct ibv_qp_init_attr qa;
		struct rdma_conn_param cp = { .responder_resources = 1,
					      .initiator_depth = 1,
					      .retry_count = 7,
					      .rnr_retry_count = 7 };
		double c0;

		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, NULL, (struct sockaddr *)a, 2000))
			return perror("resolve"), 1;
		rdma_ack_cm_event(wait_ev(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 2000))
			return perror("route"), 1;
		rdma_ack_cm_event(wait_ev(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		qa = qp_attr0;
		if (rdma_create_qp(id, NULL, &qa))
			return perror("create_qp"), 1;
		c0 = bench_now_us();
		if (rdma_connect(id, &cp))
			return perror("connect"), 1;
		rdma_ack_cm_event(wait_ev(ch, RDMA_CM_EVENT_ESTABLISHED));
		lat[i] = bench_now_us() - c0;
		rdma_disconnect(id);
		rdma_ack_cm_event(wait_ev(ch, RDMA_CM_EVENT_DISCONNECTED));
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	t = bench_now_us() - t0;
	qsort(lat, (size_t)n, sizeof(double), bench_cmp_dbl);
	printf("connections %d\nsetup_us_median %.1f\nsetup_us_p99 %.1f\n"
	       "conn_per_sec %.1f\n", n, lat[n / 2],
	       lat[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1], n / (t / 1e6));
	if (!quiet)
		for (int i = 0; i < n; i++)
			fprintf(stderr, "%.1f\n", lat[i]);
	rdma_destroy_event_channel(ch);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(7900) };
	int n = 100, srv = -1, c;
	bool quiet = false;

	while ((c = getopt_long(argc, argv, "sca:p:n:q", opts, NULL)) != -1) {
		switch (c) {
		case 's': srv = 1; break;
		case 'c': srv = 0; break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &a.sin_addr) != 1)
				return fprintf(stderr, "bad address\n"), 2;
			break;
		case 'p': a.sin_port = htons((uint16_t)atoi(optarg)); break;
		case 'n': n = atoi(optarg); break;
		case 'q': quiet = true; break;
		default: goto usage;
		}
	}
	if (srv < 0 || n <= 0)
		goto usage;
	return srv ? server(&a, n) : client(&a, n, quiet);
usage:
	fprintf(stderr, "usage: %s -s|-c [-a ADDR] [-p PORT] [-n N] [-q]\n",
		argv[0]);
	return 2;
}
