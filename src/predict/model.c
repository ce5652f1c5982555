/* ks_predict: model (being written). */
#include "kscope/predict.h"
