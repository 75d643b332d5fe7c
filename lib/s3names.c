// SPDX-License-Identifier: GPL-2.0-or-later
/* The names of object storage (s3names.h). */
#include <string.h>
#include "s3names.h"

static bool all_of(const char *s, size_t len, const char *set)
{
	for (size_t i = 0; i < len; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

#define LOWER_DIGITS	"abcdefghijklmnopqrstuvwxyz0123456789"
#define UPPER		"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGITS		"0123456789"

static bool looks_like_ipv4(const char *s, size_t len)
{
	size_t dots = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] < '0' || s[i] > '9')
			return false;
	}
	return dots == 3;
}

bool s3_valid_bucket(const char *s, size_t len)
{
	if (len < 3 || len > 63 || !all_of(s, len, LOWER_DIGITS ".-"))
		return false;
	if (!strchr(LOWER_DIGITS, s[0]) || !strchr(LOWER_DIGITS, s[len - 1]))
		return false;
	for (size_t i = 1; i < len; i++)
		if (s[i] == '.' && s[i - 1] == '.')
			return false;
	return !looks_like_ipv4(s, len);
}

bool s3_valid_user(const char *s, size_t len)
{
	return len >= 1 && len <= 63 &&
	       all_of(s, len, LOWER_DIGITS UPPER "_.@-");
}

bool s3_valid_access(const char *s, size_t len)
{
	return len >= 16 && len <= 31 && all_of(s, len, UPPER DIGITS);
}

bool s3_valid_secret(const char *s, size_t len)
{
	return len >= 20 && len <= 63 &&
	       all_of(s, len, LOWER_DIGITS UPPER "+/");
}

bool s3_valid_field(const char *field, size_t size,
		    bool (*fn)(const char *s, size_t len))
{
	const char *nul = memchr(field, 0, size);

	return nul && fn(field, (size_t)(nul - field));
}
