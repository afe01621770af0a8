// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/shared.hpp"

#include <new>
#include <sys/mman.h>

namespace ptwalk {

Shared *create_shared()
{
	void *p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return nullptr;
	return new (p) Shared{};
}

void destroy_shared(Shared *s)
{
	if (!s)
		return;
	s->~Shared();
	munmap(s, sizeof(Shared));
}

} // namespace ptwalk
