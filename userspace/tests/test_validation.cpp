// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/validation.hpp"

using namespace ptwalk;

namespace {

constexpr uint64_t ms = 1000000;

VictimOp op(pid_t tid, uint64_t start_ms, uint64_t len_ms, bool began = true, int slept = 1,
	    int preempted = 0)
{
	return VictimOp{tid, tid == 1 ? "mmap" : "fault", start_ms * ms, (start_ms + len_ms) * ms,
			true, began, slept, preempted};
}

ViewStall stall(pid_t tid, uint64_t start_ms, uint64_t len_ms)
{
	return ViewStall{tid, start_ms * ms, len_ms * ms};
}

double num(const Json &j, const char *k)
{
	const Json *x = j.find(k);
	return x && x->number() ? *x->number() : -1;
}

} // namespace

TEST(Validation, RecallAndPrecisionAgainstTheVictimsClocks)
{
	ValidationInput in;
	in.view = "module";
	for (uint64_t i = 0; i < 20; i++) {
		in.ops.push_back(op(1, 100 * i, 10));
		in.stalls.push_back(stall(1, 100 * i + 1, 8));
	}
	in.stalls_total = in.stalls.size();
	Json v = validate_stalls(in);
	EXPECT_EQ(num(v, "reference_ops"), 20);
	EXPECT_EQ(num(v, "recall"), 1.0);
	EXPECT_EQ(num(v, "precision"), 1.0);
	EXPECT_TRUE(v.find("agree")->boolean().value());

	// two operations without a stall: recall 18/20 < 0.95
	in.stalls.erase(in.stalls.begin(), in.stalls.begin() + 2);
	in.stalls_total = in.stalls.size();
	v = validate_stalls(in);
	EXPECT_EQ(num(v, "recalled"), 18);
	EXPECT_FALSE(v.find("agree")->boolean().value());
	EXPECT_EQ(v.find("unexplained")->size(), 2u);

	// a stall no victim operation contains is not confirmed
	in.stalls.push_back(stall(1, 5000, 3));
	in.stalls_total = in.stalls.size();
	v = validate_stalls(in);
	EXPECT_EQ(num(v, "stalls_checked"), 19);
	EXPECT_EQ(num(v, "confirmed"), 18);
}

TEST(Validation, OperationsThatCannotBeTheWalksAreKeptApart)
{
	ValidationInput in;
	in.view = "tracepoint";
	in.ops.push_back(op(1, 0, 10, true, 0));            // did not sleep: preempted
	in.ops.push_back(op(1, 100, 10, false));            // began before the walk
	in.ops.push_back(op(1, 200, 10));                   // a preempted victim across it
	in.ops.push_back(op(2, 195, 30, true, 1, 1));       //   (that victim: it slept, so it
							    //    is in the reference itself)
	in.ops.push_back(op(2, 300, 0));                    // shorter than the threshold
	in.stalls_total = 0;
	Json v = validate_stalls(in);
	EXPECT_EQ(num(v, "slow_not_slept"), 1);
	EXPECT_EQ(num(v, "began_before_walk"), 1);
	EXPECT_EQ(num(v, "other_victim_preempted"), 1);
	EXPECT_EQ(num(v, "reference_ops"), 1);
	EXPECT_EQ(num(v, "recall"), 0.0);

	ValidationInput none;
	none.ops.push_back(op(1, 0, 10, true, 0));
	EXPECT_TRUE(validate_stalls(none).find("recall")->is_null()); // nothing to judge
}

TEST(Validation, SecondViewAdjudicatesMisses)
{
	ValidationInput in;
	in.view = "module";
	in.ops.push_back(op(1, 0, 10));
	in.ops.push_back(op(1, 100, 10));
	in.stalls.push_back(stall(1, 1, 8));
	in.stalls_total = 1;
	std::vector<ViewStall> second;
	in.second = &second; // the tracepoint view saw nothing behind a walker
	Json v = validate_stalls(in);
	EXPECT_EQ(num(v, "not_behind_walk"), 1);
	EXPECT_EQ(num(v, "reference_ops"), 1);
	EXPECT_EQ(num(v, "recall"), 1.0);
	second.push_back(stall(1, 101, 8)); // it did: a true miss of the module
	v = validate_stalls(in);
	EXPECT_EQ(num(v, "not_behind_walk"), 0);
	EXPECT_EQ(num(v, "recall"), 0.5);

	// a waiter that spun (preempted, never slept) is a candidate with a
	// second view, and judged by it
	in.ops.push_back(op(1, 200, 10, true, 0, 1));
	second.push_back(stall(1, 201, 8));
	v = validate_stalls(in);
	EXPECT_EQ(num(v, "reference_ops"), 3);
	EXPECT_EQ(num(v, "slow_not_slept"), 0);
	in.second = nullptr; // without one it is set apart
	v = validate_stalls(in);
	EXPECT_EQ(num(v, "slow_not_slept"), 1);
}

TEST(Validation, TruncatedStallListIsADisagreement)
{
	ValidationInput in;
	in.view = "module";
	in.stalls.push_back(stall(1, 0, 5));
	in.stalls_total = 10; // nine more, possibly above the threshold
	in.ops.push_back(op(1, 0, 6));
	Json v = validate_stalls(in);
	EXPECT_FALSE(v.find("agree")->boolean().value());
}

TEST(Validation, ListCompleteAboveTheThresholdIsNotTruncation)
{
	ValidationInput in;
	in.view = "module";
	in.stalls.push_back(stall(1, 0, 5));
	in.stalls_total = 10; // nine more, all below the list's completeness bound
	in.complete_above_ns = ms;
	in.ops.push_back(op(1, 0, 6));
	Json v = validate_stalls(in);
	EXPECT_TRUE(v.find("agree")->boolean().value()) << v.dump();
	in.complete_above_ns = 2 * ms; // complete only above 2 ms: may miss one
	EXPECT_FALSE(validate_stalls(in).find("agree")->boolean().value());
}

TEST(Validation, LineSaysAgreeOrDisagree)
{
	ValidationInput in;
	in.view = "module";
	in.ops.push_back(op(1, 0, 10));
	in.stalls_total = 0;
	Json val = Json::object();
	val["stalls"] = validate_stalls(in);
	const std::string line = validation_line(val);
	EXPECT_NE(line.find("vs module: 0/1"), std::string::npos) << line;
	EXPECT_NE(line.find("DISAGREE"), std::string::npos) << line;
}
