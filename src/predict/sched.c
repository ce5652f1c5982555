/* ks_predict: sched (being written). */
#include "kscope/predict.h"
