/* A CUDA error in the runtime's diagnostics (cuda_error.h). */
#include "cuda_error.h"
#include "cuda_list.h"
#include "guard.h"

const char *ub_cuda_error_text(cudaError_t e)
{
    return ub_cuda.cudaGetErrorString ? UB_CUDA(ub_cuda.cudaGetErrorString(e)) : "CUDA error";
}
