# cmake/cuda_backend.cmake — finds what the CUDA backend needs (nvcc, the CUDA runtime, cuBLAS,
# cuDNN, NCCL) and adds src/backends/cuda/ to a target.
#
#   VDNN_CUDA=AUTO  build it when nvcc and cudnn.h/libcudnn are found (the default; CI builds it)
#   VDNN_CUDA=ON    the same, but a missing piece is a configure error
#   VDNN_CUDA=OFF   never
# Sets VDNN_HAVE_CUDA. Architectures are explicit (no GPU here to detect): 80 (A100) and 90 (H100/
# H200) unless CMAKE_CUDA_ARCHITECTURES is given. Only device_kernels.cu goes through nvcc; the
# rest of the backend is C++ compiled against the CUDA headers. NCCL (the data-parallel gradient
# all-reduce between GPU ranks, backends/cuda/nccl_communicator.h) is required with cuDNN: NVIDIA's
# toolkit images ship it beside cuDNN (here /usr/local/cuda/include/nccl.h, lib/libnccl.so.2).
set(VDNN_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE VDNN_CUDA PROPERTY STRINGS AUTO ON OFF)
set(VDNN_HAVE_CUDA OFF)

if(NOT VDNN_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY
       AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(VDNN_HAVE_CUDA ON)
    endif()
  endif()
  if(VDNN_HAVE_CUDA)
    message(STATUS "vdnn: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${CUDNN_LIBRARY}, NCCL ${NCCL_LIBRARY})")
  elseif(VDNN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VDNN_CUDA=ON but the CUDA backend cannot be built: nvcc "
                        "'${CMAKE_CUDA_COMPILER}', cuDNN header '${CUDNN_INCLUDE_DIR}', library "
                        "'${CUDNN_LIBRARY}', NCCL header '${NCCL_INCLUDE_DIR}', library '${NCCL_LIBRARY}' "
                        "(set CUDACXX or CMAKE_CUDA_COMPILER, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, "
                        "NCCL_INCLUDE_DIR, NCCL_LIBRARY)")
  else()
    message(STATUS "vdnn: CUDA backend OFF (nvcc, cuDNN or NCCL not found; VDNN_CUDA=${VDNN_CUDA})")
  endif()
else()
  message(STATUS "vdnn: CUDA backend OFF (VDNN_CUDA=OFF)")
endif()

# Adds the backend's sources, libraries and VDNN_HAVE_CUDA to `target` (a library others link).
function(vdnn_add_cuda_backend target)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/cuda/*.cc
       ${CMAKE_SOURCE_DIR}/src/backends/cuda/*.cu)
  target_sources(${target} PRIVATE ${sources})
  target_include_directories(${target} PUBLIC ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
  target_link_libraries(${target} PUBLIC CUDA::cudart CUDA::cublas ${CUDNN_LIBRARY} ${NCCL_LIBRARY})
  target_compile_definitions(${target} PUBLIC VDNN_HAVE_CUDA=1)
endfunction()
