// cuco CPU emulator: the common constants of CUDA's math_constants.h.
#ifndef CUCO_EMU_MATH_CONSTANTS_H_
#define CUCO_EMU_MATH_CONSTANTS_H_
#define CUDART_INF_F __builtin_inff()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_inf()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_MAX_NORMAL_F 3.40282347e+38f
#define CUDART_MIN_DENORM_F 1.40129846e-45f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_L2E_F 1.442695041f
#define CUDART_LN2_F 0.693147181f
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#endif
