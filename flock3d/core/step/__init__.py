"""A flock's fast step, written for its layout: the template (the loops every layout shares)
and the generator that fills its holes with the terms the layout has."""
