#include "plugin/plugin_common.h"
