/* ks_predict: measured (being written). */
#include "kscope/predict.h"
