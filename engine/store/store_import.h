// Importing one run store into another (RunStore::import_store; docs/schema.md, "Importing a
// store"): the sweeps and runs of the other store that this one lacks, told apart by uuid, with
// every row recorded with them, in one transaction of this store.
//
// The other store is opened read-only (store_open.h, open_other_store) and read in one read
// transaction, so a store still being written (a Slurm task's) is copied as of one commit. A store
// of an older version is read as it is: a table it does not have yet is passed over, and a column
// it lacks takes its default in this store (NULL, or the DEFAULT of its DDL), as a migration would
// have given it. Only `id` columns are numbered anew: a run's rows follow its new id, and a
// checkpoint's events_before and evals_before are mapped to the new ids of the same events and
// evaluations.
#pragma once

#include <string>

#include "store/run_store.h"
#include "store/sqlite_db.h"

namespace mantissa::store {

// Copies into `db` (this store, at `store_path`, writable) what the store at `other_path` holds
// and `db` does not. Throws one sentence, `db` unchanged, when the other store cannot be read or is
// this store itself. The other store's damage, found while opening it or while copying, is one
// sentence for a file that is only read: "Nothing was imported from 'F': it is damaged (...) and was
// left unchanged; import from a backup or another copy of it."
ImportResult import_store(Connection& db, const std::string& store_path, const std::string& other_path);

}  // namespace mantissa::store
