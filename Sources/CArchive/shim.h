#include <archive.h>
#include <archive_entry.h>

/* AE_IFREG is a macro with a cast, which Swift does not import. */
static const unsigned int carchive_regular_file = AE_IFREG;
