// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi setattr|getattr (dog.md §2.11, objects.md §8): key/value
 * attributes stored in attribute objects found through GET_VDI_ATTR.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"

/* the attribute object (objects.md §8.1) */
#define ATTR_NAME_OFF		0
#define ATTR_TAG_OFF		256
#define ATTR_CTIME_OFF		512
#define ATTR_SNAPID_OFF		520
#define ATTR_VALUE_LEN_OFF	524
#define ATTR_KEY_OFF		528
#define ATTR_VALUE_OFF		784

_Static_assert(ATTR_VALUE_OFF + SD_MAX_VDI_ATTR_VALUE_LEN == SD_ATTR_OBJ_SIZE,
	       "attribute object size");

struct attr_ref {
	uint64_t oid;
	uint8_t copies;
};

/*
 * GET_VDI_ATTR for @key of the current VDI @name with @flags; the whole
 * attribute (value included, @value_len bytes) travels in the request.
 * Returns the result code and, on success, the attribute object.
 */
static int get_attr_oid(const char *name, const char *key,
			const uint8_t *value, uint32_t value_len,
			uint16_t flags, struct attr_ref *ref)
{
	uint8_t *buf = xzalloc(SD_ATTR_OBJ_SIZE);
	struct sd_req req;
	struct sd_rsp rsp;
	int ret = SD_RES_EIO;

	strncpy((char *)buf + ATTR_NAME_OFF, name, SD_MAX_VDI_LEN - 1);
	put_le32(buf + ATTR_SNAPID_OFF, 0);
	put_le32(buf + ATTR_VALUE_LEN_OFF, value_len);
	strncpy((char *)buf + ATTR_KEY_OFF, key, SD_MAX_VDI_ATTR_KEY_LEN - 1);
	if (value_len)
		memcpy(buf + ATTR_VALUE_OFF, value, value_len);

	sd_init_req(&req, SD_OP_GET_VDI_ATTR);
	req.flags = SD_FLAG_CMD_WRITE | flags;
	req.data_length = SD_ATTR_OBJ_SIZE;
	req.vdi.snapid = 0;
	if (!dog_exec(&req, buf, 0, &rsp)) {
		ret = (int)rsp.result;
		if (ret == SD_RES_SUCCESS) {
			ref->oid = vid_to_attr_oid(rsp.vdi.vdi_id,
						   rsp.vdi.attr_id);
			ref->copies = rsp.vdi.copies;
		}
	}
	free(buf);
	return ret;
}

static int check_key(const char *key)
{
	if (strlen(key) >= SD_MAX_VDI_ATTR_KEY_LEN) {
		fprintf(stderr, "Attribute key '%s' is too long (at most %d "
			"bytes)\n", key, SD_MAX_VDI_ATTR_KEY_LEN - 1);
		return EXIT_USAGE;
	}
	return 0;
}

/* exit code and message for a failed lookup that the caller can't fix */
static int attr_missing(int ret, const char *key)
{
	if (ret == SD_RES_NO_OBJ) {
		fprintf(stderr, "Attribute '%s' not found\n", key);
		return EXIT_MISSING;
	}
	if (ret == SD_RES_NO_VDI || ret == SD_RES_NO_TAG) {
		fprintf(stderr, "VDI not found\n");
		return EXIT_MISSING;
	}
	return 0;
}

int vdi_setattr(int argc, char **argv)
{
	const char *name = argv[0], *key = argv[1];
	uint8_t *value = xzalloc(SD_MAX_VDI_ATTR_VALUE_LEN + 1);
	uint32_t value_len = 0;
	uint16_t flags;
	struct attr_ref ref;
	int ret;

	ret = check_name(name);
	if (!ret)
		ret = check_key(key);
	if (ret)
		goto out;
	if (argc > 2 && !vopt.delete) {
		if (strlen(argv[2]) > SD_MAX_VDI_ATTR_VALUE_LEN) {
			fprintf(stderr, "The value is too long (at most %d "
				"bytes)\n", SD_MAX_VDI_ATTR_VALUE_LEN);
			ret = EXIT_USAGE;
			goto out;
		}
		strcpy((char *)value, argv[2]);
	} else if (!vopt.delete) {
		ssize_t r = read_full(STDIN_FILENO, value,
				      SD_MAX_VDI_ATTR_VALUE_LEN);

		if (r < 0) {
			fprintf(stderr, "Failed to read the value from "
				"stdin: %s\n", strerror(errno));
			ret = EXIT_SYSFAIL;
			goto out;
		}
	}
	/* the value is a C string: it ends at its first NUL */
	value_len = (uint32_t)strnlen((char *)value,
				      SD_MAX_VDI_ATTR_VALUE_LEN);

	if (vopt.delete)
		flags = SD_FLAG_CMD_DEL;
	else
		flags = SD_FLAG_CMD_CREAT |
			(vopt.exclusive ? SD_FLAG_CMD_EXCL : 0);
	ret = get_attr_oid(name, key, value, vopt.delete ? 0 : value_len,
			   flags, &ref);
	if (ret == SD_RES_VDI_EXIST) {
		fprintf(stderr, "The attribute '%s' already exists\n", key);
		ret = EXIT_EXISTS;
		goto out;
	}
	if (ret != SD_RES_SUCCESS) {
		int code = attr_missing(ret, key);

		if (!code) {
			fprintf(stderr, "Failed to set attribute: %s\n",
				sd_strerror((uint32_t)ret));
			code = EXIT_FAILURE;
		}
		ret = code;
		goto out;
	}
	ret = EXIT_SUCCESS;
	if (vopt.delete || !value_len)
		goto out;
	/*
	 * The sheep stores the request's attribute when it creates the
	 * object; write the value again so that it is there whatever the
	 * server did with the payload.
	 */
	if (dog_write_object(ref.oid, 0, value, value_len, ATTR_VALUE_OFF,
			     SD_FLAG_CMD_DIRECT, ref.copies, 0, false)) {
		fprintf(stderr, "Failed to set attribute: failed to write "
			"the value\n");
		ret = EXIT_FAILURE;
	}
out:
	free(value);
	return ret;
}

int vdi_getattr(int argc, char **argv)
{
	const char *name = argv[0], *key = argv[1];
	struct attr_ref ref;
	uint8_t *buf = NULL;
	uint32_t len;
	int ret;

	ret = check_name(name);
	if (!ret)
		ret = check_key(key);
	if (ret)
		return ret;
	ret = get_attr_oid(name, key, NULL, 0, 0, &ref);
	if (ret != SD_RES_SUCCESS) {
		int code = attr_missing(ret, key);

		if (!code) {
			fprintf(stderr, "Failed to get attribute: %s\n",
				sd_strerror((uint32_t)ret));
			code = EXIT_FAILURE;
		}
		return code;
	}
	buf = xmalloc(SD_ATTR_OBJ_SIZE);
	ret = EXIT_FAILURE;
	if (dog_read_object(ref.oid, buf, SD_ATTR_OBJ_SIZE, 0, ref.copies, 0))
		goto out;
	len = MIN(get_le32(buf + ATTR_VALUE_LEN_OFF),
		  (uint32_t)SD_MAX_VDI_ATTR_VALUE_LEN);
	if (len && xwrite(STDOUT_FILENO, buf + ATTR_VALUE_OFF, len) < 0) {
		ret = EXIT_SYSFAIL;
		goto out;
	}
	ret = EXIT_SUCCESS;
out:
	free(buf);
	return ret;
}
