/** @file tandem/tandem.h: the whole public API of tandem. */
#ifndef TANDEM_TANDEM_H
#define TANDEM_TANDEM_H

#include "common.h"
#include "sort.h"
#include "hash.h"
#include "btree.h"
#include "view.h"
#include "ops.h"

#endif /* TANDEM_TANDEM_H */
