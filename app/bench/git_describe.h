// The commit the bench was built from, as `git describe --always --dirty` said at build time
// ("unknown" outside a git checkout). Generated so that it follows the tree, not the configure.
#pragma once

namespace mantissa::bench {
const char* git_describe();
}
