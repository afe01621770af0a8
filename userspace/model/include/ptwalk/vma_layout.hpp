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
// production one. Each kind's LockUnit cites the kernel source it rests on
// (walk_kinds.def).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptwalk/result_enums.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

struct Vma {
	uint64_t start = 0, end = 0;
	std::string name; // pathname column, may be empty
	uint64_t bytes() const { return end - start; }
};

struct VmaLayout {
	std::vector<Vma> all;          // every VMA of the process, [vsyscall] left out
	std::vector<uint64_t> mapping; // sizes of the VMAs of the walked mapping
	uint64_t largest() const;      // largest VMA of the process
	uint64_t mapping_bytes() const;
};

// Parses /proc/PID/maps. The walked mapping is every VMA whose name contains
// `mapping_name` when one does (the aliases of one memfd), else the single
// largest VMA.
VmaLayout parse_vma_layout(std::string_view maps, std::string_view mapping_name);

// Bounded summary ("workload.vma_layout"): power-of-two size buckets,
// non-empty only, and the walked mapping.
struct LayoutSummary {
	struct Bucket {
		uint64_t from_bytes = 0, to_bytes = 0, count = 0, bytes = 0;
	};
	struct Mapping {
		uint64_t vmas = 0, bytes = 0, largest_bytes = 0, smallest_bytes = 0;
	};
	uint64_t vmas = 0, bytes = 0, largest_bytes = 0;
	std::vector<Bucket> size_histogram;
	Mapping mapping;
};
LayoutSummary layout_summary(const VmaLayout &l);

// The layout production has: one VMA per mapping (a memory-mapped index),
// the layout measured (aliased), or the mapping split into VMAs of `bytes`.
struct LayoutSpec {
	enum Kind { one, aliased, size } kind = one;
	uint64_t bytes = 0; // Kind::size
};
// "one" | "aliased" | SIZE (binary suffixes); nullopt + *err when bad.
std::optional<LayoutSpec> parse_layout_spec(std::string_view s, std::string *err);
std::string describe(const LayoutSpec &l);

// How a walk of one kind holds the target's mmap_lock: its facts in
// walk_kinds.def (LockUnit, lock_mode and the kernel source they rest on).
using KindLocking = WalkKindInfo;
// nullptr for an unknown kind.
const KindLocking *kind_locking(std::string_view kind);
const char *name(LockUnit u);
// How tables name it: "lock held per" (walk_kinds.def, PTW_LOCK_UNITS).
const char *held_per(LockUnit u);
// Whether the VMA layout changes the longest hold.
bool layout_dependent(LockUnit u);

// Bytes of the mapping walked under the longest single hold for a mapping of
// `mapping_bytes` in `vmas` VMAs of at most `largest_vma` bytes each.
// vmas_per_read: VMAs one read() of a seq_file shows (read_chunk only).
uint64_t hold_bytes(LockUnit u, uint64_t mapping_bytes, uint64_t vmas, uint64_t largest_vma,
		    uint64_t vmas_per_read);

// VMAs per read() of smaps: the 4 KiB seq_file buffer holds floor(4096 /
// record) records and walks one more that does not fit (shown again by the
// next read). record_bytes = 0: an assumed 1.5 KiB record.
uint64_t smaps_vmas_per_read(double record_bytes);

// "stall_estimate": per kind the lock unit and its source, the measured
// (aliased) stall, the model's hold for the measured layout and for the
// layout asked for, and the estimate for it (corrected, a range, or
// uncorrected, with why).
struct StallEstimate {
	// The kind's locking fact for the run's kernel (locking_fact()) against
	// what the run's lock view saw of its walks.
	struct Locking {
		std::string release; // uname -r of the walked kernel; "" unknown
		LockBasis basis = LockBasis::table;
		const LockChange *change = nullptr;
		std::optional<LockMode> observed_mode; // walk_summary.lock_hold.mode
		std::optional<uint64_t> observed_hold_p50_ns, walk_p50_ns;
		std::optional<bool> agrees; // null: the run has no lock view
		std::string why;
	};
	struct Kind {
		WalkKind kind = WalkKind::clear_refs;
		Locking locking;
		LockUnit lock_unit = LockUnit::whole_walk;
		const char *source = "";
		LockMode lock_mode = LockMode::none;
		bool layout_dependent = false;
		std::optional<uint64_t> vmas_per_read; // read_chunk
		uint64_t measured_hold_bytes = 0, layout_hold_bytes = 0, model_stall_max_ns = 0;
		std::optional<MeasuredStallSource> measured_stall_source;
		std::optional<uint64_t> measured_stall_max_ns;
		std::optional<double> model_check_ratio;
		EstimateStatus status = EstimateStatus::uncorrected;
		std::optional<std::string> why;
		std::optional<double> factor; // corrected
		std::optional<uint64_t> estimate_max_ns, estimate_p50_ns;
		std::optional<std::pair<uint64_t, uint64_t>> estimate_max_range_ns,
			estimate_p50_range_ns; // range
		// A kind under VMA read locks (lock_unit vma_lock): a writer to
		// the walked VMA (a split, an unmap, mprotect) waits for the
		// walker's hold of it while holding mmap_lock for write. Model
		// here: the walk's max duration x the largest VMA's share of the
		// mapping; measured: the longest walk-held part of such a wait
		// (kernel_view.vma_locks, the module's view); the estimate: the
		// model for the layout's largest VMA (not for an aliased run,
		// whose VMAs share their pages).
		struct VmaWriter {
			uint64_t model_max_ns = 0;
			std::optional<uint64_t> measured_max_ns, estimate_max_ns;
		};
		std::optional<VmaWriter> vma_writer;
	};
	std::string layout;
	uint64_t layout_vmas = 0, layout_largest_vma_bytes = 0;
	std::vector<Kind> kinds;
};

struct RunResult;
// Sets result.stall_estimate from its scenario, walk summary, workload's
// VMA layout, victims and, for the alias backing, alias calibration; for
// the layout `spec`. Left empty without a layout or a size.
void add_stall_estimates(RunResult &result, const LayoutSpec &spec);
// Prints it, beside the aliased measurement.
void print_stall_estimates(const StallEstimate &se, FILE *out);

} // namespace ptwalk
