// SPDX-License-Identifier: GPL-2.0
// The VMA layout of a walked process, how each kind of walk holds mmap_lock
// across VMAs, and the production estimate of the worst stall for a layout
// the user names.
//
// An aliased run maps one memfd many times: many VMAs. A memory-mapped
// index is one VMA per mapping. Walks that give mmap_lock up between VMAs
// (smaps_rollup when a writer waits, smaps between read() calls) stall a
// writer for one VMA's share of the walk in the aliased run and for the
// whole walk in production, so the aliased stall must not be shown as the
// production one. Each LockUnit below cites the kernel source it rests on.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptwalk/json.hpp"

namespace ptwalk {

struct Vma {
	uint64_t start = 0, end = 0;
	std::string name; // pathname column, may be empty
	uint64_t bytes() const { return end - start; }
};

struct VmaLayout {
	std::vector<Vma> all;      // every VMA of the process, [vsyscall] left out
	std::vector<uint64_t> mapping; // sizes of the VMAs of the walked mapping
	uint64_t largest() const;  // largest VMA of the process
	uint64_t mapping_bytes() const;
};

// Parses /proc/PID/maps. The walked mapping is every VMA whose name contains
// `mapping_name` when one does (the aliases of one memfd), else the single
// largest VMA.
VmaLayout parse_vma_layout(std::string_view maps, std::string_view mapping_name);

// Bounded summary: {"vmas","bytes","largest_bytes",
// "size_histogram":[{"from_bytes","to_bytes","count","bytes"}] (power-of-two
// buckets, non-empty only), "mapping":{"vmas","bytes","largest_bytes",
// "smallest_bytes"}}.
Json layout_summary(const VmaLayout &l);

// The layout production has: one VMA per mapping (a memory-mapped index),
// the layout measured (aliased), or the mapping split into VMAs of `bytes`.
struct LayoutSpec {
	enum Kind { one, aliased, size } kind = one;
	uint64_t bytes = 0; // Kind::size
};
// "one" | "aliased" | SIZE (binary suffixes); nullopt + *err when bad.
std::optional<LayoutSpec> parse_layout_spec(std::string_view s, std::string *err);
std::string describe(const LayoutSpec &l);

// How a walk of one kind holds the target's mmap_lock.
enum class LockUnit {
	whole_walk,         // one hold for the whole walk, any layout
	vma_when_contended, // gives the lock up between VMAs when a writer waits
	read_chunk,         // one hold per read(): the VMAs one seq_file buffer takes
	pmd_chunk,          // one hold per PMD-sized (2 MiB) range, any layout
	vma_per_call,       // one hold per call; ptwalk calls once per VMA
};
struct KindLocking {
	const char *kind;
	LockUnit unit;
	const char *lock_mode; // "write" or "read"
	const char *source;    // where in the kernel, per version
};
// nullptr for an unknown kind.
const KindLocking *kind_locking(std::string_view kind);
const char *name(LockUnit u);
// Whether the VMA layout changes the longest hold.
bool layout_dependent(LockUnit u);

// Bytes of the mapping walked under the longest single hold for a mapping of
// `mapping_bytes` in `vmas` VMAs of at most `largest_vma` bytes each.
// vmas_per_read: VMAs one read() of a seq_file shows (read_chunk only).
uint64_t hold_bytes(LockUnit u, uint64_t mapping_bytes, uint64_t vmas,
		    uint64_t largest_vma, uint64_t vmas_per_read);

// VMAs per read() of smaps: the 4 KiB seq_file buffer holds floor(4096 /
// record) records and walks one more that does not fit (shown again by the
// next read). record_bytes = 0: an assumed 1.5 KiB record.
uint64_t smaps_vmas_per_read(double record_bytes);

// Adds "stall_estimate" to a result holding "scenario", "walk_summary",
// "workload.vma_layout" and, for the alias backing, "alias_calibration":
// per kind the lock unit and its source, the measured (aliased) stall, the
// model's hold for the measured layout and for `spec`, and the estimate for
// `spec` (corrected, a range, or uncorrected, with why).
void add_stall_estimates(Json &result, const LayoutSpec &spec);
// Prints it, beside the aliased measurement.
void print_stall_estimates(const Json &result, FILE *out);

} // namespace ptwalk
