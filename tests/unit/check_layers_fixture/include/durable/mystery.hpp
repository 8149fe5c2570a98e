// A public header check_layers.py does not know  // reported
#pragma once
