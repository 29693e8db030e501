// How much memory a dataset may take, asked before the memory is allocated: a file's header can
// declare gigabytes, and finding out by allocating ends in std::bad_alloc under a limit, or in the
// kernel's OOM killer without one. The budget is the smallest of this machine's physical memory
// and what this process's limits (ulimit -v, RLIMIT_AS; ulimit -d, RLIMIT_DATA) leave beside what
// it already uses. Any thread.
#pragma once

#include <cstdint>
#include <string>

namespace mantissa::data {

struct MemoryBudget {
    std::uint64_t bytes = 0;  // 0: nothing known, no check
    std::string says;         // "this machine's 15.6 GiB of memory", "the 1.0 GiB this process's
                              // address-space limit (ulimit -v) leaves free"
};

MemoryBudget memory_budget();

// "7.1 GiB", "512.0 MiB", "900 bytes".
std::string memory_text(std::uint64_t bytes);

// Throws mantissa::Error "<what> needs about 7.1 GiB of memory, more than <budget.says>; ..."
// when `needed` bytes exceed the budget.
void check_memory(std::uint64_t needed, const std::string& what);

}  // namespace mantissa::data
