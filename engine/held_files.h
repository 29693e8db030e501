// The files this process holds open through SQLite (run stores), by device and inode, so that code
// which opens a file a person named (an experiment file, a dataset file: user_file.h) can
// refuse one of them instead of opening it. Opening and closing a descriptor of a file drops every
// POSIX lock the process holds on it, and SQLite's locks are such locks: a GUI recording a run would
// lose them if Open… were pointed at the store (docs/architecture.md, "The run store").
//
// store/sqlite_db.* holds each connection's file here while it is open. Header-only, below both
// mantissa_config and mantissa_store, which share it; thread-safe (connections open and close on
// several threads).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace mantissa {

class HeldFiles {
public:
    using Key = std::pair<dev_t, ino_t>;

    static HeldFiles& instance() {
        static HeldFiles files;
        return files;
    }

    // The file `path` names (links followed); empty when it cannot be looked at.
    static std::optional<Key> key_of(const std::string& path) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return std::nullopt;
        return Key{st.st_dev, st.st_ino};
    }

    void hold(const Key& key) {
        std::lock_guard lock(m_mutex);
        ++m_count[key];
    }
    void release(const Key& key) {
        std::lock_guard lock(m_mutex);
        if (const auto it = m_count.find(key); it != m_count.end() && --it->second == 0) m_count.erase(it);
    }

    // True when `path` is a database this process holds, or the -wal, -shm or -journal file SQLite
    // keeps beside one (those are named for it, so the name tells).
    bool held(const std::string& path) const {
        if (held_key(key_of(path))) return true;
        for (const char* suffix : {"-wal", "-shm", "-journal"}) {
            const std::string s = suffix;
            if (path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0 &&
                held_key(key_of(path.substr(0, path.size() - s.size()))))
                return true;
        }
        return false;
    }

private:
    bool held_key(const std::optional<Key>& key) const {
        if (!key) return false;
        std::lock_guard lock(m_mutex);
        return m_count.count(*key) > 0;
    }

    mutable std::mutex m_mutex;
    std::map<Key, int> m_count;  // how many connections of this process have each file open
};

// Holds one file in HeldFiles for as long as it lives (a connection's database). Move-only.
class HeldFile {
public:
    HeldFile() = default;
    explicit HeldFile(const std::string& path) : m_key(HeldFiles::key_of(path)) {
        if (m_key) HeldFiles::instance().hold(*m_key);
    }
    ~HeldFile() { reset(); }
    HeldFile(HeldFile&& other) noexcept : m_key(std::exchange(other.m_key, std::nullopt)) {}
    HeldFile& operator=(HeldFile&& other) noexcept {
        if (this != &other) {
            reset();
            m_key = std::exchange(other.m_key, std::nullopt);
        }
        return *this;
    }
    HeldFile(const HeldFile&) = delete;
    HeldFile& operator=(const HeldFile&) = delete;

    void reset() {
        if (m_key) HeldFiles::instance().release(*m_key);
        m_key.reset();
    }

private:
    std::optional<HeldFiles::Key> m_key;
};

}  // namespace mantissa
