// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: budget files.
 * Declared in ptwalk_util.h.
 */
#include "ptwalk_util_int.h"
#include "kselftest.h"

/* ---- budgets ------------------------------------------------------- */

#define PTW_BUDGET_KEY(e, key, def) [e] = key,
const char *const ptw_budget_keys[PB_NR_KEYS] = { PTW_BUDGET_KEYS(PTW_BUDGET_KEY) };
#undef PTW_BUDGET_KEY

#define PTW_BUDGET_DEFAULT(e, key, def) [e] = def,
const double ptw_budget_defaults[PB_NR_KEYS] = { PTW_BUDGET_KEYS(PTW_BUDGET_DEFAULT) };
#undef PTW_BUDGET_DEFAULT

static int budget_parse(struct ptw_budget *b, const char *path)
{
	char line[512];
	int lineno = 0, bad = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		ksft_print_msg("budget: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *end;
		size_t kl;
		double d;
		int i;

		lineno++;
		k += strspn(k, " \t");
		if (*k == '#' || *k == '\n' || !*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			ksft_print_msg("budget %s:%d: no '=': %s\n", path, lineno, k);
			bad++;
			continue;
		}
		kl = eq - k;
		while (kl && isspace((unsigned char)k[kl - 1]))
			kl--;
		v = eq + 1;
		d = strtod(v, &end);
		end += strspn(end, " \t\r\n");
		if (end == v || (*end && *end != '#')) {
			ksft_print_msg("budget %s:%d: bad number: %s\n", path, lineno, v);
			bad++;
			continue;
		}
		for (i = 0; i < PB_NR_KEYS; i++)
			if (strlen(ptw_budget_keys[i]) == kl &&
			    !strncmp(k, ptw_budget_keys[i], kl))
				break;
		if (i == PB_NR_KEYS) {
			ksft_print_msg("budget %s:%d: unknown key %.*s (ignored)\n",
				       path, lineno, (int)kl, k);
			continue;
		}
		b->v[i] = d;
	}
	fclose(f);
	snprintf(b->source, sizeof(b->source), "%s", path);
	return bad ? -1 : 0;
}

static bool exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return false;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return false;
	*slash = 0;
	return true;
}

int ptw_budget_load(struct ptw_budget *b, const char *path)
{
	char dir[PATH_MAX], cls[200], p[PATH_MAX + 256];
	const char *bdir = getenv("PTWALK_BUDGET_DIR");
	int i, r;

	for (i = 0; i < PB_NR_KEYS; i++)
		b->v[i] = ptw_budget_defaults[i];
	snprintf(b->source, sizeof(b->source), "built-in defaults");
	if (path) {
		r = budget_parse(b, path);
		ksft_print_msg("budget: %s%s\n", path, r ? " (ERROR)" : "");
		return r;
	}
	if (bdir && *bdir)
		snprintf(dir, sizeof(dir), "%s", bdir);
	else if (exe_dir(dir, sizeof(dir) - 16))
		strcat(dir, "/budgets");
	else
		dir[0] = 0;
	ptw_host_class(cls, sizeof(cls));
	if (dir[0]) {
		snprintf(p, sizeof(p), "%s/%s.budget", dir, cls);
		if (access(p, R_OK) == 0) {
			r = budget_parse(b, p);
			ksft_print_msg("budget: %s (host class %s)%s\n", p, cls,
				       r ? " (ERROR)" : "");
			return r;
		}
		snprintf(p, sizeof(p), "%s/default.budget", dir);
		if (access(p, R_OK) == 0) {
			r = budget_parse(b, p);
			ksft_print_msg("budget: %s (no %s.budget for this host class)%s\n",
				       p, cls, r ? " (ERROR)" : "");
			return r;
		}
	}
	ksft_print_msg("budget: built-in defaults (host class %s)\n", cls);
	return 0;
}
