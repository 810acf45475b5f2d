// Random path attributes for the table's property tests (rapidcheck),
// compiled once in attrs_gen.cpp: an AS_PATH of up to four segments of
// every type, each optional attribute present or not, a few unknown
// optional transitive ones.
#pragma once

#include <rapidcheck.h>

#include "codec/attribute_set.h"

namespace petrel::table::testing {

rc::Gen<codec::AsPath> gen_path();
// Random attributes: each optional one present or not (ORIGINATOR_ID and
// CLUSTER_LIST among them), a few unknown optional transitive attributes
// (which may sort before known ones); the next hop is 192.0.2.1.
rc::Gen<codec::PathAttributes> gen_attrs();

}  // namespace petrel::table::testing
