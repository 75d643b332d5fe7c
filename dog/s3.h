/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dog s3: object storage's registry and buckets, read through dog's
 * sheep (s3.c, s3_bucket.c).
 */
#ifndef DOG_S3_H
#define DOG_S3_H

#include <stddef.h>
#include <stdint.h>
#include "dog.h"
#include "kvtree.h"

/* a kvtree in VDI *@vid, read only (@vid must outlive it): 0 or -1 */
int s3_open_tree(uint32_t *vid, struct kvtree **t);
/*
 * The registry (the system volume's tree): 0, 1 when there is none yet
 * (no user was ever made), -1 said why on stderr
 */
int s3_open_registry(uint32_t *vid, struct kvtree **t);
/* every entry of the registry from @prefix on through @fn: an exit code */
int s3_scan_registry(const char *prefix,
		     int (*fn)(const void *key, size_t klen, const void *val,
			       size_t vlen, void *arg));

extern const struct subcommand s3_bucket_cmds[];

#endif
