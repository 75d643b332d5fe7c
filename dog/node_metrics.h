/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dog node stat -m (node_metrics.c) */
#ifndef DOG_NODE_METRICS_H
#define DOG_NODE_METRICS_H

/* print the target sheep's metrics; an exit code */
int node_stat_metrics(void);

#endif
