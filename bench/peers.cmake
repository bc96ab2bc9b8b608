# bench/peers.cmake: the one place that finds the peer libraries of the
# benchmarks. Each found peer becomes an interface target carrying its include
# directories, libraries and a HHG_HAVE_<PEER>=1 definition:
#   hhg_peer_bullet     Bullet (pkg-config `bullet`: its CMake config has relative include paths)
#   hhg_peer_fcl        FCL (find_package(fcl); fcl.pc would add -std=c++11)
#   hhg_peer_cgal       CGAL (find_package(CGAL), header-only)
#   hhg_peer_nanoflann  nanoflann (header-only)
# hhg's own adapters join the peers of the engine they plug into:
#   bullet-hhg  hhg::bullet_broadphase: with hhg_peer_bullet when the target
#               hhg_bullet (adapters/, configured after bench/) exists at
#               generate time (HHG_HAVE_BULLET_ADAPTER=1)
#   fcl-hhg     hhg::fcl_manager (header only): with hhg_peer_fcl
# A missing peer has no target and is reported once; programs link the
# targets that exist (see hhg_link_peers).
include_guard(GLOBAL)
include(CheckIncludeFileCXX)

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(HHG_BULLET QUIET IMPORTED_TARGET bullet)
endif()
if(HHG_BULLET_FOUND)
  add_library(hhg_peer_bullet INTERFACE)
  # Bullet's headers are not warning-clean: system headers
  target_include_directories(hhg_peer_bullet SYSTEM INTERFACE ${HHG_BULLET_INCLUDE_DIRS})
  target_link_libraries(hhg_peer_bullet INTERFACE ${HHG_BULLET_LINK_LIBRARIES})
  target_compile_definitions(hhg_peer_bullet INTERFACE HHG_HAVE_BULLET=1)
endif()

find_package(fcl CONFIG QUIET)
if(TARGET fcl)
  add_library(hhg_peer_fcl INTERFACE)
  target_link_libraries(hhg_peer_fcl INTERFACE fcl)
  target_compile_definitions(hhg_peer_fcl INTERFACE HHG_HAVE_FCL=1)
endif()

find_package(CGAL QUIET)
if(CGAL_FOUND)
  add_library(hhg_peer_cgal INTERFACE)
  target_link_libraries(hhg_peer_cgal INTERFACE CGAL::CGAL)
  target_compile_definitions(hhg_peer_cgal INTERFACE HHG_HAVE_CGAL=1)
endif()

check_include_file_cxx(nanoflann.hpp HHG_NANOFLANN_FOUND)
if(HHG_NANOFLANN_FOUND)
  add_library(hhg_peer_nanoflann INTERFACE)
  target_compile_definitions(hhg_peer_nanoflann INTERFACE HHG_HAVE_NANOFLANN=1)
endif()

foreach(peer bullet fcl cgal nanoflann)
  if(TARGET hhg_peer_${peer})
    list(APPEND HHG_PEERS_FOUND ${peer})
  else()
    list(APPEND HHG_PEERS_MISSING ${peer})
  endif()
endforeach()
message(STATUS "hhg benchmark peers found: ${HHG_PEERS_FOUND}; missing: ${HHG_PEERS_MISSING}")

# hhg_link_peers(target peer...): links the named peers that were found.
function(hhg_link_peers target)
  foreach(peer ${ARGN})
    if(TARGET hhg_peer_${peer})
      target_link_libraries(${target} PRIVATE hhg_peer_${peer})
      if(peer STREQUAL "bullet")
        target_link_libraries(${target} PRIVATE $<TARGET_NAME_IF_EXISTS:hhg_bullet>)
        target_compile_definitions(${target} PRIVATE $<$<TARGET_EXISTS:hhg_bullet>:HHG_HAVE_BULLET_ADAPTER=1>)
      endif()
    endif()
  endforeach()
endfunction()
