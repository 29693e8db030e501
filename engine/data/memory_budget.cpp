// The memory budget for loading a dataset (see memory_budget.h). Read from sysconf, getrlimit and
// /proc/self/statm (the process's current address-space and data sizes, in pages).
#include "data/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "error.h"

namespace mantissa::data {
namespace {

struct Usage {
    std::uint64_t address_space = 0;  // bytes mapped (VmSize)
    std::uint64_t data = 0;           // bytes of data and stack, what RLIMIT_DATA counts
};

Usage current_usage() {
    Usage u;
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0, resident = 0, shared = 0, text = 0, lib = 0, data = 0;
    if (!(statm >> size >> resident >> shared >> text >> lib >> data)) return u;
    const long page = ::sysconf(_SC_PAGE_SIZE);
    if (page <= 0) return u;
    u.address_space = size * static_cast<std::uint64_t>(page);
    u.data = data * static_cast<std::uint64_t>(page);
    return u;
}

// What the soft limit `resource` leaves beside `used` bytes; false when there is no limit.
bool limit_left(int resource, std::uint64_t used, std::uint64_t& left) {
    struct rlimit lim {};
    if (::getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return false;
    const auto cap = static_cast<std::uint64_t>(lim.rlim_cur);
    left = cap > used ? cap - used : 0;
    return true;
}

}  // namespace

std::string memory_text(std::uint64_t bytes) {
    char buf[32];
    if (bytes >= (std::uint64_t{1} << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
    else if (bytes >= (std::uint64_t{1} << 20))
        std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
    else
        std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    return buf;
}

MemoryBudget memory_budget() {
    MemoryBudget budget;
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) {
        budget.bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
        budget.says = "this machine's " + memory_text(budget.bytes) + " of memory";
    }
    const Usage used = current_usage();
    std::uint64_t left = 0;
    if (limit_left(RLIMIT_AS, used.address_space, left) && (budget.bytes == 0 || left < budget.bytes)) {
        budget.bytes = left;
        budget.says = "the " + memory_text(left) + " that this process's address-space limit (ulimit -v) leaves free";
    }
    if (limit_left(RLIMIT_DATA, used.data, left) && (budget.bytes == 0 || left < budget.bytes)) {
        budget.bytes = left;
        budget.says = "the " + memory_text(left) + " that this process's data-size limit (ulimit -d) leaves free";
    }
    return budget;
}

void check_memory(std::uint64_t needed, const std::string& what) {
    const MemoryBudget budget = memory_budget();
    if (budget.bytes == 0 && budget.says.empty()) return;
    if (needed <= budget.bytes) return;
    throw Error(what + " needs about " + memory_text(needed) + " of memory, more than " + budget.says +
                "; it was refused before reading.");
}

}  // namespace mantissa::data
