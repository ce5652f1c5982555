/* ks_predict: out (being written). */
#include "kscope/predict.h"
