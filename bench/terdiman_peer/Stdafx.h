// Ours, not Terdiman's: a minimal stand-in for the precompiled header of P.
// Terdiman's "box pruning revisited" (Shared/StdAfx.h + BoxPruning17/StdAfx.h
// of github.com/Pierre-Terdiman/BoxPruning), so that his files, whose algorithm
// is not modified, compile with g++. His .cpp files and compare.cpp include it
// as "Stdafx.h". It provides only what CompleteBoxPruning, Container and
// RadixSort need (ICE's types, Point, AABB); his own IceMemoryMacros.h,
// IceContainer.h, IceRevisitedRadix.h and IceBoxPruning.h are included as they
// are, from the temporary directory scripts/terdiman_peer.sh copies them to
// (none of his files is in this repository).
// clang-format off
#pragma once
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUNCTION extern "C"
#ifndef ASSERT
#define ASSERT assert
#endif
#define inline_ inline __attribute__((always_inline))

// as in ICE's IceTypes.h
#define null 0
typedef unsigned char ubyte;
typedef signed int sdword;
typedef unsigned int udword;
static_assert(sizeof(udword) == 4 && sizeof(sdword) == 4 && sizeof(ubyte) == 1, "ICE types");
#define IR(x) ((udword&)(x))
struct Pair { udword id0; udword id1; };

// as in ICE's IceUtils.h
#define PREVENT_COPY(curclass) private: curclass(const curclass& object); curclass& operator=(const curclass& object);

#include "IceMemoryMacros.h"

namespace IceCore {
#define ICECORE_API
#include "IceContainer.h"
#include "IceRevisitedRadix.h"
}  // namespace IceCore
using namespace IceCore;

namespace IceMaths {
// ICE's Point, reduced to its three contiguous floats
class Point {
 public:
  float x, y, z;
};
}  // namespace IceMaths
using namespace IceMaths;

namespace Meshmerizer {
#define MESHMERIZER_API
// ICE's AABB as in Shared/StdAfx.h: mMin then mMax, contiguous; Intersect() is closed on every axis
class AABB {
 public:
  inline_ bool Intersect(const AABB& a) const {
    if (mMax.x < a.mMin.x || a.mMax.x < mMin.x || mMax.y < a.mMin.y || a.mMax.y < mMin.y ||
        mMax.z < a.mMin.z || a.mMax.z < mMin.z)
      return false;
    return true;
  }
  Point mMin;
  Point mMax;
};
#include "IceBoxPruning.h"
}  // namespace Meshmerizer
using namespace Meshmerizer;
// clang-format on
