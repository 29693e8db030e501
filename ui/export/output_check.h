// The check every save and export of the GUI makes before it writes a file (chart export, a run's
// tables and experiment file, Save experiment): store/output_guard.h's, so a file is refused for
// the reasons and in the words mantissa-cli's -o and mantissa's --screenshot use, with the file's
// name where the CLI puts the option ("/tmp/x.png is a named pipe (FIFO), ...; choose a regular
// file."): the run store, any SQLite database and its -wal, -shm and -journal files, a Mantissa
// checkpoint, a named pipe, a socket or a block device, a symbolic link loop.
//
// Plain functions over the engine's checks: a database and its side files are looked at with stat()
// and SQLite's VFS only (never with a descriptor of our own: store/store_files.h says why); only a
// regular file that is neither is opened, to read a safetensors header. GUI thread or any other.
#pragma once

#include <QString>

namespace mantissa::ui {

// The sentence refusing to write `path`, empty when it may be written. The default run store
// (live/store_location.h) is named "the run store"; a store given with --db is an SQLite
// database and refused as one.
QString outputRefusal(const QString& path);

// The file that writing `path` replaces: `path` itself or, for a symbolic link, the file its links
// lead to (one still to be created included), so an output written beside it and renamed into
// place keeps the link. `path` itself when the links loop (outputRefusal says so first).
QString outputDestination(const QString& path);

}  // namespace mantissa::ui
