/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP output for the ptshare tests, compatible with kselftest:
 * "ok N name", "not ok N name", "ok N # SKIP name", then "1..N".
 */
#ifndef PTSHARE_TAP_H
#define PTSHARE_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

static int tap_n, tap_failed;

static inline void tap_result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

static inline void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d # SKIP ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (%s)\n", why);
	fflush(stdout);
}

/* Diagnostics go to stdout as TAP comments so they stay in order. */
#define tap_diag(...) do { printf("# " __VA_ARGS__); printf("\n"); } while (0)

static inline int tap_finish(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
