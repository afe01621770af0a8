// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk debugfs interface: <debugfs>/ptwalk/{walks,stalls,vma_waits,hist,
 * counters,hooks,reset}.  Every line of every file is a record of space separated
 * key=value tokens; the format is documented in README.md.  Files are
 * root only (0400, reset 0200).  Nothing here prints a kernel pointer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/fs.h>

#include "ptwalk.h"

static struct dentry *ptw_dir;

#define PTW_MODE_NAME(v, name) [v] = name,
static const char *const ptw_mode_names[] = { PTW_LOCK_MODES(PTW_MODE_NAME) };
#undef PTW_MODE_NAME

/*
 * A record's format from its key list in ptwalk_abi.h: " key=conv" each,
 * the leading space skipped (+ 1; the compiler still checks the format).
 */
#define PTW_KV_FMT(key, conv) " " #key "=" conv

/* comm may hold any byte: escape everything but [!-~] minus '=' and '%' */
#define PTW_COMM_ESC_LEN	(TASK_COMM_LEN * 3 + 1)
static const char *ptw_escape_comm(char *buf, const char *comm)
{
	unsigned int i, n = 0;

	for (i = 0; i < TASK_COMM_LEN && comm[i]; i++) {
		unsigned char c = comm[i];

		if (c > ' ' && c < 0x7f && c != '=' && c != '%')
			buf[n++] = c;
		else
			n += scnprintf(buf + n, PTW_COMM_ESC_LEN - n, "%%%02x", c);
	}
	if (i == 0)
		n += scnprintf(buf, PTW_COMM_ESC_LEN, "%%00");
	buf[n] = '\0';
	return buf;
}

/* ---- snapshot-backed record files ------------------------------------ */

struct ptw_snap {
	size_t n;
	size_t size;	/* bytes per record */
	char recs[];
};

static void *ptw_snap_start(struct seq_file *m, loff_t *pos)
{
	struct ptw_snap *s = m->private;

	return *pos < s->n ? s->recs + *pos * s->size : NULL;
}

static void *ptw_snap_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return ptw_snap_start(m, pos);
}

static void ptw_snap_stop(struct seq_file *m, void *v)
{
}

static int ptw_walk_show(struct seq_file *m, void *v)
{
	const struct ptw_walk_rec *r = v;
	char comm[PTW_COMM_ESC_LEN];

	seq_printf(m, PTW_WALK_KEYS(PTW_KV_FMT) "\n" + 1,
		   r->seq, ptw_kind_names[r->kind], r->walker_pid,
		   ptw_escape_comm(comm, r->walker_comm), r->target_tgid,
		   r->start_ns, r->end_ns, r->call_ns, r->walk_ns,
		   r->walk_timed, r->pte_tables, r->pte_slots, r->pte_revisits,
		   r->lock_hold_ns, r->lock_holds, ptw_mode_names[r->lock_mode & 3],
		   r->tlb_flushes, r->tlb_ipis, r->calls, r->stalls,
		   r->lock_wait_ns, r->probe_missed, r->vma_locks,
		   r->vma_hold_ns, r->vma_hold_max_ns, r->vma_fallbacks,
		   r->pte_tables_mmap_locked);
	return 0;
}

static int ptw_stall_show(struct seq_file *m, void *v)
{
	const struct ptw_stall_rec *r = v;
	char comm[PTW_COMM_ESC_LEN];

	seq_printf(m, PTW_STALL_KEYS(PTW_KV_FMT) "\n" + 1,
		   r->walk_seq, ptw_kind_names[r->kind], r->waiter_pid,
		   ptw_escape_comm(comm, r->waiter_comm), r->target_tgid,
		   r->start_ns, r->wait_ns, ptw_mode_names[r->write ? 2 : 1],
		   r->walker_pid, ptw_mode_names[r->walker_write ? 2 : 1],
		   r->success, r->walker_held_ns, r->others_held_ns,
		   r->split_complete, r->clock_spread_ns, r->vma_chain_ns,
		   r->late_hold_ns, r->at_release);
	return 0;
}

static int ptw_vma_wait_show(struct seq_file *m, void *v)
{
	const struct ptw_vma_wait_rec *r = v;
	char comm[PTW_COMM_ESC_LEN];

	seq_printf(m, PTW_VMA_WAIT_KEYS(PTW_KV_FMT) "\n" + 1,
		   r->walk_seq, ptw_kind_names[r->kind], r->writer_pid,
		   ptw_escape_comm(comm, r->writer_comm), r->target_tgid,
		   r->start_ns, r->wait_ns, r->walker_held_ns, r->walker_pid,
		   r->behind_walk, r->detach);
	return 0;
}

static const struct seq_operations ptw_vma_wait_seq_ops = {
	.start = ptw_snap_start,
	.next = ptw_snap_next,
	.stop = ptw_snap_stop,
	.show = ptw_vma_wait_show,
};

static const struct seq_operations ptw_walk_seq_ops = {
	.start = ptw_snap_start,
	.next = ptw_snap_next,
	.stop = ptw_snap_stop,
	.show = ptw_walk_show,
};

static const struct seq_operations ptw_stall_seq_ops = {
	.start = ptw_snap_start,
	.next = ptw_snap_next,
	.stop = ptw_snap_stop,
	.show = ptw_stall_show,
};

enum ptw_ring { PTW_RING_WALKS, PTW_RING_STALLS, PTW_RING_VMA_WAITS };

static int ptw_snap_open(struct file *file, const struct seq_operations *ops,
			 size_t size, size_t max, enum ptw_ring ring)
{
	struct ptw_snap *s;
	int err;

	s = kvmalloc(struct_size(s, recs, size * max), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->size = size;
	if (ring == PTW_RING_WALKS)
		s->n = ptw_walk_ring_snapshot((struct ptw_walk_rec *)s->recs,
					      max);
	else if (ring == PTW_RING_STALLS)
		s->n = ptw_stall_ring_snapshot((struct ptw_stall_rec *)s->recs,
					       max);
	else
		s->n = ptw_vma_wait_ring_snapshot((struct ptw_vma_wait_rec *)
						  s->recs, max);
	err = seq_open(file, ops);
	if (err) {
		kvfree(s);
		return err;
	}
	((struct seq_file *)file->private_data)->private = s;
	return 0;
}

static int ptw_snap_release(struct inode *inode, struct file *file)
{
	struct seq_file *m = file->private_data;

	kvfree(m->private);
	return seq_release(inode, file);
}

static int ptw_walks_open(struct inode *inode, struct file *file)
{
	return ptw_snap_open(file, &ptw_walk_seq_ops,
			     sizeof(struct ptw_walk_rec), PTW_WALK_RING,
			     PTW_RING_WALKS);
}

static int ptw_stalls_open(struct inode *inode, struct file *file)
{
	return ptw_snap_open(file, &ptw_stall_seq_ops,
			     sizeof(struct ptw_stall_rec), PTW_STALL_RING,
			     PTW_RING_STALLS);
}

static int ptw_vma_waits_open(struct inode *inode, struct file *file)
{
	return ptw_snap_open(file, &ptw_vma_wait_seq_ops,
			     sizeof(struct ptw_vma_wait_rec), PTW_VMA_WAIT_RING,
			     PTW_RING_VMA_WAITS);
}

static const struct file_operations ptw_vma_waits_fops = {
	.owner = THIS_MODULE,
	.open = ptw_vma_waits_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = ptw_snap_release,
};

static const struct file_operations ptw_walks_fops = {
	.owner = THIS_MODULE,
	.open = ptw_walks_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = ptw_snap_release,
};

static const struct file_operations ptw_stalls_fops = {
	.owner = THIS_MODULE,
	.open = ptw_stalls_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = ptw_snap_release,
};

/* ---- hist ------------------------------------------------------------- */

static void ptw_show_hist(struct seq_file *m, const char *name,
			  unsigned int kind, struct ptw_hist *h)
{
	unsigned int i;

	for (i = 0; i < PTW_HIST_SLOTS; i++) {
		u64 c = atomic64_read(&h->slot[i]);
		u64 lo = i ? 1ULL << (i - 1) : 0;
		u64 hi = i ? (i == PTW_HIST_SLOTS - 1 ? U64_MAX :
			      (1ULL << i) - 1) : 0;

		if (c)
			seq_printf(m, PTW_HIST_KEYS(PTW_KV_FMT) "\n" + 1,
				   name, ptw_kind_names[kind], i, lo, hi, c);
	}
}

static int ptw_hist_show(struct seq_file *m, void *v)
{
	unsigned int k;

	for (k = 0; k < PTW_NR_KINDS; k++) {
		ptw_show_hist(m, "walk_ns", k, &ptw_stats.walk_ns[k]);
		ptw_show_hist(m, "ns_per_pte", k, &ptw_stats.ns_per_pte[k]);
		ptw_show_hist(m, "lock_hold_ns", k,
			      &ptw_stats.lock_hold_ns[k]);
		ptw_show_hist(m, "stall_ns", k, &ptw_stats.stall_ns[k]);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ptw_hist);

/* ---- counters ----------------------------------------------------------- */

static void ptw_counter(struct seq_file *m, const char *name, const char *kind,
			long long v)
{
	seq_printf(m, PTW_COUNTER_KEYS(PTW_KV_FMT) "\n" + 1, name, kind, v);
}

/* the value of each counter of PTW_COUNTERS_ALL */
#define PTW_STAT_ALL(c)							\
static long long ptw_counter_all_##c(u64 kp_missed, u64 krp_missed)	\
{									\
	return atomic64_read(&ptw_stats.c);				\
}

PTW_STAT_ALL(walks_dropped)
PTW_STAT_ALL(waits_dropped)
PTW_STAT_ALL(walks_open_unread)
PTW_STAT_ALL(holders_dropped)
PTW_STAT_ALL(arg_faults)
PTW_STAT_ALL(walks_missed)
PTW_STAT_ALL(failed_attempts)
PTW_STAT_ALL(vma_waits_dropped)
PTW_STAT_ALL(waits_unblocked)
PTW_STAT_ALL(tp_stamps_lost)
PTW_STAT_ALL(waits_marked_late)
PTW_STAT_ALL(waits_split_late)
PTW_STAT_ALL(waits_marked_retired)
#undef PTW_STAT_ALL
static long long ptw_counter_all_kp_nmissed(u64 kp_missed, u64 krp_missed)
{
	return kp_missed;
}

static long long ptw_counter_all_krp_nmissed(u64 kp_missed, u64 krp_missed)
{
	return krp_missed;
}

static long long ptw_counter_all_inject_delay_ns(u64 kp_missed, u64 krp_missed)
{
	return READ_ONCE(ptw_inject_delay_ns);
}

static int ptw_counters_show(struct seq_file *m, void *v)
{
	u64 kp_missed = 0, krp_missed = 0;
	unsigned int k;

	for (k = 0; k < ptw_nr_krp_hooks; k++) {
		if (!ptw_krp_hooks[k].attached)
			continue;
		krp_missed += ptw_krp_hooks[k].krp.nmissed;
		kp_missed += ptw_krp_hooks[k].krp.kp.nmissed;
	}
	for (k = 0; k < ptw_nr_kp_hooks; k++)
		if (ptw_kp_hooks[k].attached)
			kp_missed += ptw_kp_hooks[k].kp.nmissed;

	for (k = 0; k < PTW_NR_KINDS; k++) {
#define PTW_COUNT_KIND(c)						\
		ptw_counter(m, #c, ptw_kind_names[k], atomic64_read(&ptw_stats.c[k]));
		PTW_COUNTERS_PER_KIND(PTW_COUNT_KIND)
#undef PTW_COUNT_KIND
	}
#define PTW_COUNT_ALL(c) ptw_counter(m, #c, "all", ptw_counter_all_##c(kp_missed, krp_missed));
	PTW_COUNTERS_ALL(PTW_COUNT_ALL)
#undef PTW_COUNT_ALL
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ptw_counters);

/* ---- hooks --------------------------------------------------------------- */

/* the kinds= value of a hook: a comma list of kind names, or none */
#define PTW_KINDS_STR_LEN	128
static const char *ptw_kinds_str(char *buf, u32 kinds)
{
	unsigned int k, n = 0;

	buf[0] = '\0';
	for (k = 0; k < PTW_NR_KINDS; k++)
		if (kinds & BIT(k))
			n += scnprintf(buf + n, PTW_KINDS_STR_LEN - n, "%s%s",
				       n ? "," : "", ptw_kind_names[k]);
	return n ? buf : "none";
}

static const char *ptw_status(bool requested, bool attached)
{
	if (!requested)
		return "disabled";
	return attached ? "attached" : "missing";
}

static int ptw_hooks_show(struct seq_file *m, void *v)
{
	char kinds[PTW_KINDS_STR_LEN];
	unsigned int i, k;

	for (i = 0; i < ptw_nr_krp_hooks; i++) {
		struct ptw_krp_hook *h = &ptw_krp_hooks[i];
		bool req = (h->kinds & ptw_kinds_mask) &&
			   (!h->vma || ptw_vma_view_built);

		seq_printf(m, PTW_HOOK_KEYS(PTW_KV_FMT) "\n" + 1, h->sym, "kretprobe",
			   ptw_kinds_str(kinds, h->kinds), ptw_status(req, h->attached),
			   h->err, h->attached ? h->krp.nmissed : 0,
			   h->attached ? h->krp.kp.nmissed : 0UL,
			   h->attached ? h->krp.maxactive : 0, h->required);
	}
	for (i = 0; i < ptw_nr_kp_hooks; i++) {
		struct ptw_kp_hook *h = &ptw_kp_hooks[i];
		bool req = (h->kinds & ptw_kinds_mask) &&
			   (!h->vma || ptw_vma_view_built);

		seq_printf(m, PTW_HOOK_KEYS(PTW_KV_FMT) "\n" + 1, h->sym, "kprobe",
			   ptw_kinds_str(kinds, h->kinds), ptw_status(req, h->attached),
			   h->err, 0, h->attached ? h->kp.nmissed : 0UL, 0, h->required);
	}
	for (i = 0; i < ptw_nr_tp_hooks; i++) {
		struct ptw_tp_hook *h = &ptw_tp_hooks[i];

		seq_printf(m, PTW_HOOK_KEYS(PTW_KV_FMT) "\n" + 1, h->name, "tracepoint",
			   ptw_kinds_str(kinds, PTW_ALL_KINDS), ptw_status(true, h->attached),
			   h->err, 0, 0UL, 0, 0U);
	}
	for (k = 0; k < PTW_NR_KINDS; k++)
		seq_printf(m, PTW_KIND_STATE_KEYS(PTW_KV_FMT) "\n" + 1,
			   ptw_kind_names[k], !!(ptw_kinds_mask & BIT(k)),
			   !!(READ_ONCE(ptw_kinds_active) & BIT(k)));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ptw_hooks);

/* ---- reset ------------------------------------------------------------------ */

static ssize_t ptw_reset_write(struct file *file, const char __user *buf,
			       size_t count, loff_t *ppos)
{
	ptw_reset();
	return count;
}

static const struct file_operations ptw_reset_fops = {
	.owner = THIS_MODULE,
	.write = ptw_reset_write,
	.llseek = noop_llseek,
};

int ptw_debugfs_init(void)
{
	ptw_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(ptw_dir)) {
		pr_err("cannot create debugfs directory (%ld)\n",
		       PTR_ERR(ptw_dir));
		return PTR_ERR(ptw_dir);
	}
	debugfs_create_file("walks", 0400, ptw_dir, NULL, &ptw_walks_fops);
	debugfs_create_file("stalls", 0400, ptw_dir, NULL, &ptw_stalls_fops);
	debugfs_create_file("vma_waits", 0400, ptw_dir, NULL,
			    &ptw_vma_waits_fops);
	debugfs_create_file("hist", 0400, ptw_dir, NULL, &ptw_hist_fops);
	debugfs_create_file("counters", 0400, ptw_dir, NULL,
			    &ptw_counters_fops);
	debugfs_create_file("hooks", 0400, ptw_dir, NULL, &ptw_hooks_fops);
	debugfs_create_file("reset", 0200, ptw_dir, NULL, &ptw_reset_fops);
	return 0;
}

void ptw_debugfs_exit(void)
{
	debugfs_remove_recursive(ptw_dir);
	ptw_dir = NULL;
}
