// rapidcheck generators for OPEN, capabilities, NOTIFICATION and
// ROUTE-REFRESH values that the encoders can represent exactly, so that
// decode(encode(x)) == x holds for every generated x. Defined in
// open_gen.cpp (compiled once for the four test files that use them).
#pragma once

#include <rapidcheck.h>

#include "codec/capabilities.h"
#include "codec/notification.h"
#include "codec/open.h"
#include "codec/route_refresh.h"

namespace petrel::codec::gen {

rc::Gen<Capabilities> capabilities();
rc::Gen<Open> open();
rc::Gen<Notification> notification();
rc::Gen<RouteRefresh> route_refresh();

}  // namespace petrel::codec::gen
