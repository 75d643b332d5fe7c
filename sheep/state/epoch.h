/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The config file and the epoch log of this node (state/epoch.c). */
#ifndef SHEEP_STATE_EPOCH_H
#define SHEEP_STATE_EPOCH_H

#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"

/* the config from/to cstate (and sys.self.space) */
int config_load(void);
int config_save(void);

int write_file_atomic(const char *path, const void *buf, size_t len);
void epoch_path(char *buf, size_t len, uint32_t epoch);
int epoch_log_write(uint32_t epoch, const struct sd_node *nodes, size_t nr);
/* the nodes of @epoch (at most @max) and its time; -1 if unknown */
int epoch_log_read(uint32_t epoch, struct sd_node *nodes, size_t max,
		   uint64_t *time);
uint32_t epoch_log_latest(void);
void epoch_log_clear(void);
/* create BASE/epoch */
int epoch_log_init(void);

#endif
