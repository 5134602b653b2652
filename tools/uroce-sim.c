// SPDX-License-Identifier: MIT
/*
 * uroce-sim: run the real uroce transport on a simulated fabric.
 *
 *   uroce-sim [-c FILE] [-s KEY=VALUE]... [--seed N] [--lb MODE]
 *             [--workload W] [-o PREFIX] [--progress[=SECONDS]]
 *
 * Settings are the configuration file's keys (docs/sim.md); -s and the
 * shortcuts apply after the file, in order. Prints a summary; with -o
 * writes PREFIX_flows.csv, PREFIX_links.csv and PREFIX_summary.csv.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-sim [-c FILE] [-s KEY=VALUE]... [--seed N] [--lb single|spray|adaptive]\n"
		"                 [--workload ring|alltoall|permutation|incast|trace|poisson] [-o PREFIX]\n"
		"                 [--progress[=SECONDS]]  (a line every SECONDS of wall time, default 2,\n"
		"                 with the time left; 0: every 65536 events)\n"
		"keys: see docs/sim.md (topology k leaves spines hosts_per_leaf host_gbps fabric_gbps\n"
		"      link_delay_ns link_loss fail degrade restore buffer_kb ecn kmin_kb kmax_kb pmax pfc\n"
		"      pfc_xoff_kb pfc_xon_kb pfc_headroom_kb mtu cc window timeout nic_queue_kb lb\n"
		"      paths sr reseq_us workload bytes chunks ranks placement incast_senders trace end_us\n"
		"      cdf load arrive_us max_flows sample_us; poisson: -s cdf=FILE -s load=0.5)\n");
}

static int set(struct sim_cfg *c, const char *key, const char *val)
{
	char err[256];

	if (sim_cfg_set(c, key, val, err, sizeof(err))) {
		fprintf(stderr, "uroce-sim: %s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "lb", required_argument, NULL, 'l' },
		{ "workload", required_argument, NULL, 'w' },
		{ "out", required_argument, NULL, 'o' },
		{ "progress", optional_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sim_cfg c;
	struct sim_result r;
	const char *out = NULL;
	char err[512];
	struct sim *s;
	int opt;

	sim_cfg_default(&c);
	while ((opt = getopt_long(argc, argv, "c:s:o:w:ph", opts, NULL)) != -1) {
		char *eq;

		switch (opt) {
		case 'c':
			if (sim_cfg_load(&c, optarg, err, sizeof(err))) {
				fprintf(stderr, "uroce-sim: %s\n", err);
				return 2;
			}
			break;
		case 's':
			eq = strchr(optarg, '=');
			if (!eq) {
				fprintf(stderr, "uroce-sim: -s expects KEY=VALUE\n");
				return 2;
			}
			*eq = 0;
			if (set(&c, optarg, eq + 1))
				return 2;
			break;
		case 'S':
			if (set(&c, "seed", optarg))
				return 2;
			break;
		case 'l':
			if (set(&c, "lb", optarg))
				return 2;
			break;
		case 'w':
			if (set(&c, "workload", optarg))
				return 2;
			break;
		case 'o':
			out = optarg;
			break;
		case 'p':
			c.progress = true;
			if (optarg) {
				char *end;

				c.progress_s = strtod(optarg, &end);
				if (end == optarg || *end || !(c.progress_s >= 0) ||
				    c.progress_s > 86400) {
					fprintf(stderr, "uroce-sim: --progress=%s: "
						"expected seconds, 0..86400\n", optarg);
					return 2;
				}
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce-sim: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (!c.work) {
		fprintf(stderr, "uroce-sim: nothing to simulate: give a workload "
			"(--workload ring|alltoall|permutation|incast|trace|poisson, or "
			"workload= in -c FILE or -s)\n");
		return 2;
	}
	if (out) {
		/* Before the run, not after it: a folder that is not there. */
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s_summary.csv", out);
		f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "uroce-sim: -o %s: cannot write %s: %s\n",
				out, path, strerror(errno));
			return 2;
		}
		fclose(f);
	}
	s = sim_create(&c, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "uroce-sim: %s\n", err);
		return 2;
	}
	if (sim_workload(s, err, sizeof(err))) {
		fprintf(stderr, "uroce-sim: %s\n", err);
		sim_destroy(s);
		return 2;
	}
	sim_run(s, UINT64_MAX);
	sim_result(s, &r);
	sim_print_result(&r, stdout);
	if (out) {
		char path[512];
		FILE *f;

		if (sim_write_csv(s, out)) {
			fprintf(stderr, "uroce-sim: cannot write %s_*.csv\n", out);
			sim_destroy(s);
			return 1;
		}
		snprintf(path, sizeof(path), "%s_summary.csv", out);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "hosts,flows,flows_done,completion_us,fct_mean_us,fct_p99_us,host_util,fabric_util,max_link_util,drops,ecn_marks,cnps,pause_frames,paused_us,max_queue_bytes,retransmits,timeouts,events,hops,wall_s,cpu_s,max_rss_kb\n");
			fprintf(f, "%lu,%lu,%lu,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%lu,%lu,%lu,%lu,%.2f,%lu,%lu,%lu,%lu,%lu,%.2f,%.2f,%lu\n",
				(unsigned long)r.hosts, (unsigned long)r.flows,
				(unsigned long)r.flows_done,
				(r.t_last - r.t_first) / 1e3, r.fct_mean_us,
				r.fct_p99_us, r.host_util, r.fabric_util,
				r.max_link_util, (unsigned long)r.drops,
				(unsigned long)r.ecn_marks, (unsigned long)r.cnps,
				(unsigned long)r.pause_frames, r.paused_ns / 1e3,
				(unsigned long)r.max_queue,
				(unsigned long)r.retransmits,
				(unsigned long)r.timeouts, (unsigned long)r.events,
				(unsigned long)r.hops, r.wall_s, r.cpu_s,
				(unsigned long)r.max_rss_kb);
			fclose(f);
		}
	}
	sim_destroy(s);
	return r.flows_done == r.flows ? 0 : 1;
}
