/* ks_predict: chip (being written). */
#include "kscope/predict.h"
