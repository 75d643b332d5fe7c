/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry of users and buckets as this gateway knows it
 * (s3_reg.c): read from the system volume again whenever an S3_REGISTRY
 * op was applied since (ops/s3reg.c); changes go through that op.
 */
#ifndef SHEEP_FRONT_S3_REG_H
#define SHEEP_FRONT_S3_REG_H

#include <stdbool.h>
#include <stdint.h>
#include "internal_proto.h"

struct s3_user {
	char name[S3REG_NAME_LEN];
	char access[S3REG_ACCESS_LEN];
	char secret[S3REG_SECRET_LEN];
};

struct s3_bucket_rec {
	char name[S3REG_NAME_LEN];
	char user[S3REG_NAME_LEN];
	char gateway[S3REG_NAME_LEN];	/* the owner's S3 endpoint */
	uint64_t created;
	char node[S3REG_NAME_LEN];	/* the owner's sheep ("" if unknown) */
	uint64_t boot;			/* the owner's life */
};

/* 0 found, -1 not there, -2 the registry cannot be read */
int s3reg_find_key(const char *access, struct s3_user *u);
int s3reg_find_user(const char *name, struct s3_user *u);
int s3reg_find_bucket(const char *name, struct s3_bucket_rec *b);
/*
 * The buckets of @user in name order into a new array (*@out, free()):
 * how many, or -2
 */
int s3reg_buckets_of(const char *user, struct s3_bucket_rec **out);
/* the same, of the buckets @keep keeps */
int s3reg_buckets(bool (*keep)(const struct s3_bucket_rec *b,
			       const void *arg),
		  const void *arg, struct s3_bucket_rec **out);
/* an S3_REGISTRY change (r->vid filled in here): the SD_RES result */
int s3reg_change(struct s3reg_req *r);

#endif
