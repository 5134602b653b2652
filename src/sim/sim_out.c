// SPDX-License-Identifier: MIT
/* Results: a summary, and CSV files of flows and links. */
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

const char *const sim_bucket_names[SIM_NBUCKETS] = {
	"<10KB", "10KB-100KB", "100KB-1MB", "1MB-10MB", ">=10MB",
};

void sim_print_result(const struct sim_result *r, FILE *f)
{
	double span = r->t_last > r->t_first ? (r->t_last - r->t_first) / 1e3 : 0;

	fprintf(f, "hosts %lu switches %lu qps %lu flows %lu/%lu\n",
		(unsigned long)r->hosts, (unsigned long)r->switches,
		(unsigned long)r->qps, (unsigned long)r->flows_done,
		(unsigned long)r->flows);
	fprintf(f, "completion_us %.2f\n", span);
	fprintf(f, "fct_us mean %.2f p50 %.2f p99 %.2f\n", r->fct_mean_us,
		r->fct_p50_us, r->fct_p99_us);
	fprintf(f, "slowdown p50 %.2f p99 %.2f\n", r->slow_p50, r->slow_p99);
	for (unsigned int b = 0; b < SIM_NBUCKETS; b++)
		fprintf(f, "slowdown_bucket %s flows %lu p50 %.2f p99 %.2f\n",
			sim_bucket_names[b], (unsigned long)r->slow[b].n,
			r->slow[b].p50, r->slow[b].p99);
	fprintf(f, "util host %.3f fabric %.3f max_link %.3f\n", r->host_util,
		r->fabric_util, r->max_link_util);
	fprintf(f, "queue_kb p50 %.0f p99 %.0f samples %lu\n", r->queue_p50_kb,
		r->queue_p99_kb, (unsigned long)r->queue_samples);
	fprintf(f, "jain %.4f offered_load %.4f\n", r->jain, r->offered_load);
	fprintf(f, "drops %lu ecn_marks %lu cnps %lu pause_frames %lu paused_us %.1f max_queue_kb %.1f\n",
		(unsigned long)r->drops, (unsigned long)r->ecn_marks,
		(unsigned long)r->cnps, (unsigned long)r->pause_frames,
		r->paused_ns / 1e3, r->max_queue / 1024.0);
	fprintf(f, "retransmits %lu timeouts %lu nak_seq %lu sr_held %lu sr_naks %lu\n",
		(unsigned long)r->retransmits, (unsigned long)r->timeouts,
		(unsigned long)r->nak_seq, (unsigned long)r->sr_held,
		(unsigned long)r->sr_naks);
	fprintf(f, "paths sprayed %lu losses %lu ecn %lu\n",
		(unsigned long)r->sprayed, (unsigned long)r->path_losses,
		(unsigned long)r->path_ecn);
	fprintf(f, "events %lu hops %lu wall_s %.2f cpu_s %.2f events_per_cpu_s %.3gM hops_per_cpu_s %.3gM max_rss_mb %.0f\n",
		(unsigned long)r->events, (unsigned long)r->hops, r->wall_s,
		r->cpu_s, r->cpu_s > 0 ? r->events / r->cpu_s / 1e6 : 0,
		r->cpu_s > 0 ? r->hops / r->cpu_s / 1e6 : 0,
		r->max_rss_kb / 1024.0);
}

int sim_write_csv(struct sim *s, const char *prefix)
{
	char path[512];
	FILE *f;
	double span = s->t_last > s->t_first ? (double)(s->t_last - s->t_first) : 0;

	snprintf(path, sizeof(path), "%s_flows.csv", prefix);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "flow,src,dst,bytes,t_post_ns,t_done_ns,fct_us,ideal_us,slowdown\n");
	for (uint32_t i = 0; i < s->nflows; i++) {
		const struct sim_flow *fl = &s->flows[i];

		double ideal = (double)sim__ideal_ns(s, fl);

		fprintf(f, "%u,%u,%u,%lu,%lu,%lu,%.3f,%.3f,%.4f\n", i, fl->src,
			fl->dst, (unsigned long)fl->bytes,
			(unsigned long)fl->t_post, (unsigned long)fl->t_done,
			fl->t_done ? (fl->t_done - fl->t_post) / 1e3 : -1.0,
			ideal / 1e3,
			fl->t_done ? (fl->t_done - fl->t_post) / ideal : -1.0);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s_links.csv", prefix);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "node,port,peer,gbps,up,tx_bytes,util,max_queue_bytes,ecn_marks,drops,pause_frames_sent,paused_us\n");
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct sim_node *n = &s->nodes[i];

		for (uint32_t j = 0; j < n->nports; j++) {
			struct sim_port *pt = &n->ports[j];

			fprintf(f, "%s,%u,%s,%.1f,%d,%lu,%.4f,%u,%lu,%lu,%lu,%.2f\n",
				n->name, j, pt->peer->node->name, pt->bps / 1e9,
				pt->up, (unsigned long)pt->tx_bytes,
				span && pt->up ? pt->tx_bytes * 8e9 / (pt->bps * span) : 0,
				pt->qmax, (unsigned long)pt->marks,
				(unsigned long)pt->drops,
				(unsigned long)pt->pause_frames, pt->paused_ns / 1e3);
		}
	}
	fclose(f);
	return 0;
}
