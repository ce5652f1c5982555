/*
 * libkscope-predict.so: the ks_pred_* functions of ks_predict (linked in
 * whole; predict.map exports only them).  This file only gives the shared
 * library a source of its own.
 */
#include "kscope/predict.h"
