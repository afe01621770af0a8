// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/procfs.hpp"

using namespace ptwalk;

static std::string data(const std::string &name)
{
	auto s = read_file(std::string(PTWALK_TESTDATA) + "/proc/" + name, nullptr);
	EXPECT_TRUE(s.has_value()) << name;
	return s.value_or("");
}

TEST(Procfs, SmapsRollup618)
{
	MemRollup r = parse_smaps_rollup(data("smaps_rollup-6.18.txt"));
	EXPECT_EQ(r.rss, 1744u * 1024);
	EXPECT_EQ(r.referenced, 1744u * 1024);
	EXPECT_EQ(r.anonymous, 108u * 1024);
	EXPECT_TRUE(r.has_file_pmd);
	EXPECT_TRUE(r.has_shmem_pmd);
}

TEST(Procfs, SmapsRollupThp)
{
	MemRollup r = parse_smaps_rollup(data("smaps_rollup-thp-6.18.txt"));
	EXPECT_EQ(r.anon_huge, 64u << 20);
	ProcStatus s = parse_status(data("status-6.18.txt"));
	WalkSize w = walk_size(r, s, 2u << 20);
	EXPECT_EQ(w.pmd_entries, 32u);
	EXPECT_EQ(w.ptes, (r.rss - r.anon_huge) / 4096);
	EXPECT_EQ(w.entries, w.ptes + 32);
	EXPECT_EQ(w.huge_bytes, 64u << 20);
}

TEST(Procfs, SmapsRollupOldKernelWithoutNewerFields)
{
	// 4.19: no FilePmdMapped, no Pss_* split
	MemRollup r = parse_smaps_rollup(data("smaps_rollup-4.19.txt"));
	EXPECT_FALSE(r.has_file_pmd);
	EXPECT_TRUE(r.has_shmem_pmd);
	EXPECT_EQ(r.rss, 10240u * 1024);
	EXPECT_EQ(r.private_hugetlb, 4096u * 1024);
	WalkSize w = walk_size(r, ProcStatus{}, 2u << 20);
	// 6 MiB of 4 KiB pages, 2 PMD leaves, 2 hugetlb pages
	EXPECT_EQ(w.ptes, 1536u);
	EXPECT_EQ(w.pmd_entries, 2u);
	EXPECT_EQ(w.entries, 1536u + 2 + 2);
}

TEST(Procfs, SmapsReferencedSum)
{
	std::string text = data("smaps-6.18.txt");
	uint64_t sum = sum_smaps_referenced(text);
	EXPECT_GT(sum, 0u);
	EXPECT_EQ(sum % 1024, 0u);
	EXPECT_EQ(sum_smaps_referenced("Referenced:  4 kB\nRss: 8 kB\nReferenced: 8 kB\n"),
		  12u * 1024);
}

// Only the VMAs within the range count; a VMA header's "00:00" is no key.
TEST(Procfs, SmapsReferencedInARange)
{
	const char *text = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
			   "Rss:            4096 kB\n"
			   "Referenced:     1024 kB\n"
			   "7f0000400000-7f0000401000 rw-p 00000000 00:00 0          [heap]\n"
			   "Referenced:        4 kB\n"
			   "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n"
			   "Referenced:        8 kB\n";
	EXPECT_EQ(sum_smaps_referenced_in(text, 0x7f0000000000, 0x7f0000400000), 1024u * 1024);
	EXPECT_EQ(sum_smaps_referenced_in(text, 0x7f0000000000, 0x7f0000401000), 1028u * 1024);
	EXPECT_EQ(sum_smaps_referenced_in(text, 0x7f0000000000, 0x7f00003ff000), 0u);
	EXPECT_EQ(sum_smaps_referenced_in(text, 0, ~0ull), sum_smaps_referenced(text));
	// a whole smaps file: its total, its first VMA alone at most
	const std::string full = data("smaps-6.18.txt");
	EXPECT_EQ(sum_smaps_referenced_in(full, 0, ~0ull), sum_smaps_referenced(full));
}

TEST(Procfs, Status)
{
	ProcStatus s = parse_status(data("status-6.18.txt"));
	EXPECT_TRUE(s.has_vm_pte);
	EXPECT_GT(s.vm_pte, 0u);
	EXPECT_GE(s.threads, 1u);
	ProcStatus none = parse_status("Name:\tx\nThreads:\t3\n");
	EXPECT_FALSE(none.has_vm_pte);
	EXPECT_EQ(none.threads, 3u);
}

TEST(Procfs, Meminfo)
{
	MemInfo m = parse_meminfo(data("meminfo-6.18.txt"));
	EXPECT_GT(m.total, 1ull << 30);
	EXPECT_GT(m.available, 0u);
	EXPECT_LE(m.available, m.total);
	EXPECT_EQ(m.hugepage_size, 2u << 20);
}

TEST(Procfs, KernelConfigPicksRelevantOptions)
{
	Json c = parse_kernel_config("CONFIG_PER_VMA_LOCK=y\n"
				     "# CONFIG_MEM_SOFT_DIRTY is not set\n"
				     "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n"
				     "CONFIG_PREEMPT_RT=y\n"
				     "CONFIG_HZ=250\n"
				     "CONFIG_PREEMPTION=y\n"
				     "CONFIG_USB=y\n"
				     "CONFIG_LOCALVERSION=\"-x\"\n");
	EXPECT_EQ(c.find("CONFIG_PER_VMA_LOCK")->string(), "y");
	EXPECT_EQ(c.find("CONFIG_MEM_SOFT_DIRTY")->string(), "n");
	EXPECT_EQ(c.find("CONFIG_TRANSPARENT_HUGEPAGE_MADVISE")->string(), "y");
	EXPECT_EQ(c.find("CONFIG_PREEMPT_RT")->string(), "y");
	EXPECT_EQ(c.find("CONFIG_HZ")->string(), "250");
	EXPECT_EQ(c.find("CONFIG_USB"), nullptr);
	EXPECT_EQ(c.find("CONFIG_PREEMPTION"), nullptr); // not a PREEMPT_ sub-option
}

TEST(Procfs, KernelVersion)
{
	EXPECT_EQ(kernel_version("6.18.44-fc-v595"), std::make_pair(6, 18));
	EXPECT_EQ(kernel_version("6.1.0-56-amd64"), std::make_pair(6, 1));
	EXPECT_EQ(kernel_version("garbage"), std::make_pair(0, 0));
}

// uname -v of Debian's rt and non-rt kernels: PREEMPT_RT only as a word
TEST(Procfs, PreemptRtVersion)
{
	EXPECT_TRUE(preempt_rt_version("#1 SMP PREEMPT_RT Debian 6.1.192-2 (2025-11-02)"));
	EXPECT_TRUE(preempt_rt_version("PREEMPT_RT"));
	EXPECT_FALSE(preempt_rt_version("#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2025-11-02)"));
	EXPECT_FALSE(preempt_rt_version("#1 SMP PREEMPT_RTX"));
	EXPECT_FALSE(preempt_rt_version("#1 SMP NOPREEMPT_RT"));
	EXPECT_FALSE(preempt_rt_version(""));
}

// The text kernel_info() and host_info() have always had (key order, null
// and false where a fact is unknown): results are compared across versions.
TEST(Procfs, KernelInfoJsonKeepsItsOrderAndNulls)
{
	KernelInfo k;
	k.uname = KernelInfo::Uname{"6.1.0-x", "#1 SMP", "x86_64"};
	k.config_source = "/boot/config-6.1.0-x";
	k.config = parse_kernel_config("CONFIG_HZ=250\n");
	EXPECT_EQ(Json::Value(k).dump(),
		  R"({"release":"6.1.0-x","version":"#1 SMP","machine":"x86_64",)"
		  R"("config_source":"/boot/config-6.1.0-x","config":{"CONFIG_HZ":"250"}})");
	k.config_source.reset();
	EXPECT_EQ(Json::Value(k).dump(),
		  R"({"release":"6.1.0-x","version":"#1 SMP","machine":"x86_64",)"
		  R"("config_source":null,"config":{},"config_note":)"
		  R"("no /proc/config.gz or /boot/config-<release>: options unknown"})");
	k.uname.reset();
	EXPECT_EQ(Json::Value(k).dump().substr(0, 19), R"({"config_source":nu)");
}

TEST(Procfs, HostInfoJsonKeepsItsOrderAndNulls)
{
	HostInfo h;
	h.hostname = "h";
	h.cpus = 1;
	EXPECT_EQ(Json::Value(h).dump(),
		  R"({"hostname":"h","cpus":1,"thp":{"enabled":null,"defrag":null,)"
		  R"("shmem_enabled":null},"virtualized":false,"vm":null})");
	h.cpu_model = "Xeon";
	h.mem = MemInfo{1, 2, 4, 3, 5};
	h.thp_enabled = "[always] madvise never";
	h.thp_defrag = "madvise";
	h.thp_shmem_enabled = "never";
	h.virtualized = "hypervisor";
	h.vm = VmFacts{"tcg", "icount", "max,la57=off", ""};
	EXPECT_EQ(Json::Value(h).dump(),
		  R"({"hostname":"h","cpu_model":"Xeon","cpus":1,"mem_total_bytes":1,)"
		  R"("mem_available_bytes":2,"hugepages_total":3,"hugepages_free":4,)"
		  R"("hugepage_size_bytes":5,"thp":{"enabled":"[always] madvise never",)"
		  R"("defrag":"madvise","shmem_enabled":"never"},"virtualized":"hypervisor",)"
		  R"("vm":{"accel":"tcg","clock":"icount","cpu":"max,la57=off","qemu":null}})");
}

// What scripts/ptwalk-vm appends to a guest's command line (qemu.py's
// guest_facts) is read back; anything else is not taken for it.
TEST(Procfs, VmFactsFromTheKernelCommandLine)
{
	auto f = parse_vm_cmdline("console=ttyS0 panic=-1 ptwalk_accel=tcg ptwalk_clock=icount "
				  "ptwalk_cpu=max,la57=off ptwalk_qemu=10.0.2\n");
	ASSERT_TRUE(f);
	EXPECT_EQ(f->accel, "tcg");
	EXPECT_EQ(f->clock, "icount");
	EXPECT_EQ(f->cpu, "max,la57=off");
	EXPECT_EQ(f->qemu, "10.0.2");
	EXPECT_FALSE(parse_vm_cmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"));
	EXPECT_FALSE(parse_vm_cmdline(""));
	EXPECT_FALSE(parse_vm_cmdline("ptwalk_clock= ptwalk_accel"));
	// a value past 64 bytes or with a control byte is not ours
	EXPECT_FALSE(parse_vm_cmdline("ptwalk_qemu=" + std::string(65, 'x')));
	EXPECT_FALSE(parse_vm_cmdline(std::string("ptwalk_cpu=a\x01"
						  "b")));
	f = parse_vm_cmdline("ptwalk_clock=realtime");
	ASSERT_TRUE(f);
	EXPECT_EQ(f->clock, "realtime");
	EXPECT_TRUE(f->accel.empty());
}

TEST(Procfs, KernelAndHostInfoOfThisHost)
{
	KernelInfo k = kernel_info();
	ASSERT_TRUE(k.uname);
	EXPECT_FALSE(k.uname->release.empty());
	HostInfo h = host_info();
	EXPECT_GT(h.cpus, 0);
	EXPECT_TRUE(h.mem);
}
