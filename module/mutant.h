/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Planted bugs for `make check-mutants` (tests/harness/check-mutants.sh): the
 * suite must fail on each. A test build passes FR_MUTANT=name on the
 * module's make command line, and Kbuild defines FR_MUTANT_NAME; DKMS and
 * `make install` never do, so in every other build FR_MUTANT() is 0 and
 * the conditions on it compile away. tests/mutants lists the names.
 */
#ifndef FASTREMAP_MUTANT_H
#define FASTREMAP_MUTANT_H

#include <linux/kconfig.h>

#define FR_MUTANT(name)	IS_ENABLED(FR_MUTANT_##name)

#endif /* FASTREMAP_MUTANT_H */
